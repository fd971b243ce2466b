// One way for tests and benchmarks to drive a page in any of the three
// engines (./engines.ts): a Session is one browser with one fresh profile (its
// tabs share IndexedDB, Web Locks and the service worker, as a user's tabs
// do); a Tab is one top-level page in it. Each engine's tool sits behind it
// (./playwright.ts, ./puppeteer.ts, ./webdriver.ts), so a test is written once.
//
// What no engine's tool gives alike is left to the page: uncaught errors and
// console errors are recorded by the page itself (./page-record.ts), because
// classic WebDriver reports neither.

import type { EngineName } from './engines.ts'

/** A function run in the page: self-contained (no closures), and no named functions inside (a transform could wrap them in a helper the page lacks). */
export type PageFunction<A, R> = (arg: A) => R | Promise<R>

export interface Tab {
  goto(url: string): Promise<void>
  reload(): Promise<void>
  /** History: the page may come back from the back/forward cache. */
  back(): Promise<void>
  forward(): Promise<void>
  url(): Promise<string>
  /** Runs `fn(arg)` in the page and returns its (awaited, JSON-serializable) result. */
  evaluate<A, R>(fn: PageFunction<A, R>, arg: A): Promise<R>
  /** Real input events on the one element matching `css`. */
  click(css: string): Promise<void>
  hover(css: string): Promise<void>
  /** Replaces an input's or textarea's value, as typing would. */
  fill(css: string, value: string): Promise<void>
  /** A key chord on the focused element `css`: 'Enter', 'Control+Enter'. */
  press(css: string, keys: string): Promise<void>
  moveMouse(x: number, y: number): Promise<void>
  setViewport(width: number, height: number): Promise<void>
  screenshot(path: string): Promise<void>
  close(): Promise<void>
}

export interface Session {
  readonly engine: EngineName
  /** A new top-level tab (about:blank) in this session's profile. */
  newTab(): Promise<Tab>
  /** Ends the browser and everything it started (by PID). */
  close(): Promise<void>
}

export interface LaunchOptions {
  /** Let pages enter the back/forward cache (Playwright turns it off in Chromium by default). */
  bfcache?: boolean
}

/** 'Control+Enter' → its keys, modifiers first. */
export function chord(keys: string): string[] {
  return keys.split('+')
}

/** How long one in-page poll may run before control returns to Node (other tabs of a classic WebDriver session wait meanwhile). */
const POLL_SLICE_MS = 500

/**
 * Waits until `fn(arg)` returns something truthy in the page, then returns
 * it. It polls in the page every `interval` ms, as Playwright's
 * waitForFunction does, in slices so that a navigation (which ends the
 * page's script) or another tab's turn only starts the next slice.
 */
export async function waitForFunction<A, R>(
  tab: Tab,
  fn: PageFunction<A, R>,
  arg: A,
  { timeout, interval = 20, what = 'the page' }: { timeout: number; interval?: number; what?: string },
): Promise<NonNullable<R>> {
  const deadline = Date.now() + timeout
  let last: unknown = null
  for (;;) {
    try {
      const got = await tab.evaluate(
        async ({ src, arg, slice, interval }) => {
          const f = new Function(`return (${src})`)() as (a: unknown) => unknown
          const end = performance.now() + slice
          for (;;) {
            const v = await f(arg)
            if (v) return { v }
            if (performance.now() >= end) return null
            await new Promise((r) => setTimeout(r, interval))
          }
        },
        { src: fn.toString(), arg, slice: Math.min(POLL_SLICE_MS, Math.max(0, deadline - Date.now())), interval },
      )
      if (got) return got.v as NonNullable<R>
      last = null
    } catch (e) {
      // The page navigated (or is navigating) under the poll: poll the next document.
      last = e
    }
    if (Date.now() >= deadline) throw new Error(`waiting for ${what}: not within ${timeout} ms${last ? ` (last: ${String(last)})` : ''}`)
  }
}
