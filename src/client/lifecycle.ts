// When this page stops running and starts again without unloading: the
// back/forward cache (WebKit's page cache: Safari, every iPhone browser;
// Chromium's and Firefox's too) and a frozen background tab (Chromium's page
// lifecycle).
//
// A page in the back/forward cache is frozen with its workers, and whatever
// Web Locks they hold stay held. Another page that waits for one (a
// database's name lock) would wait until this one is evicted, possibly
// forever. So a page that enters the cache must let go of what others wait
// for first: `pagehide` with `persisted` (the page may come back), or
// `freeze`, is the last moment it runs. `pageshow` with `persisted`, or
// `resume`, says it runs again.
//
// https://html.spec.whatwg.org/multipage/nav-history-apis.html#the-pagetransitionevent-interface
// https://wicg.github.io/page-lifecycle/#sec-api

export interface LifecycleHandlers {
  /** The page stops running now; let go of what other pages wait for (synchronously: nothing after this runs until resume). */
  suspend(): void
  /** The page runs again, as it was when it stopped. */
  resume(): void
}

/** Calls `suspend`/`resume` as this page enters and leaves the back/forward cache or a freeze, until `signal` aborts. Nothing outside a window. */
export function onPageLifecycle(handlers: LifecycleHandlers, signal: AbortSignal): void {
  if (typeof window === 'undefined' || typeof document === 'undefined') return
  const opts = { signal }
  // persisted false: the page unloads for good, and its workers and locks end with it.
  window.addEventListener('pagehide', (e) => void (e.persisted && handlers.suspend()), opts)
  window.addEventListener('pageshow', (e) => void (e.persisted && handlers.resume()), opts)
  document.addEventListener('freeze', () => handlers.suspend(), opts)
  document.addEventListener('resume', () => handlers.resume(), opts)
}
