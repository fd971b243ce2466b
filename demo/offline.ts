// Registers the service worker (built site only: the dev server serves
// modules that change on every edit) and says whether the page is ready to
// work offline.
//
// It says so only once the database has answered (`answered`): a cached page
// whose database has not yet started anywhere is not yet an app that works
// offline, and a green "ready" beside a database still booting reads as if
// the whole page were ready. The service worker installs meanwhile.

declare const __BUILT_SITE__: boolean

export async function enableOffline(show: (text: string, ready: boolean) => void, answered: Promise<unknown>): Promise<void> {
  if (!__BUILT_SITE__) return show('offline mode: only in the built site (npm run demo)', false)
  if (!('serviceWorker' in navigator)) return show('offline mode: this browser has no service workers', false)
  show('offline copy: waiting for the database', false)
  const installed = navigator.serviceWorker.register('./sw.js', { scope: './' }).then(async (reg) => {
    await navigator.serviceWorker.ready
    return reg
  })
  installed.catch(() => {}) // reported below, after the database answers
  try {
    await answered
  } catch {
    return show('offline copy: not checked (the database did not start)', false)
  }
  try {
    show('offline copy: caching the app…', false)
    const reg = await installed
    const controlled = () => show(navigator.serviceWorker.controller ? 'ready to work offline' : 'offline copy cached: works offline from the next load', true)
    if (reg.active) controlled()
    navigator.serviceWorker.addEventListener('controllerchange', controlled)
  } catch (e) {
    show(`offline mode unavailable: ${(e as Error).message}`, false)
  }
}
