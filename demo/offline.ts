// Registers the service worker (built site only: the dev server serves
// modules that change on every edit) and says whether the page is ready to
// work offline.

declare const __BUILT_SITE__: boolean

export async function enableOffline(show: (text: string, ready: boolean) => void): Promise<void> {
  if (!__BUILT_SITE__) return show('offline mode: only in the built site (npm run demo)', false)
  if (!('serviceWorker' in navigator)) return show('offline mode: this browser has no service workers', false)
  try {
    const reg = await navigator.serviceWorker.register('./sw.js', { scope: './' })
    await navigator.serviceWorker.ready
    const controlled = () => show(navigator.serviceWorker.controller ? 'ready to work offline' : 'offline copy cached: works offline from the next load', true)
    if (reg.active) controlled()
    navigator.serviceWorker.addEventListener('controllerchange', controlled)
  } catch (e) {
    show(`offline mode unavailable: ${(e as Error).message}`, false)
  }
}
