// What the browser benchmarks (bench/browser.ts, bench/tabs.ts) share to run
// in every engine (test/support/browsers): which engines a run uses, a
// Chromium session with extra flags, and a long page run that Node follows by
// polling the page.

import { chromium } from 'playwright'
import { launch, waitForFunction, type Session, type Tab } from '../test/support/browsers/index.ts'
import { CHROMIUM_ARGS, chromiumPath, ENGINES, INSTALL, missingFiles, type EngineName } from '../test/support/browsers/engines.ts'
import { playwrightTab } from '../test/support/browsers/playwright.ts'

export { ENGINES, type EngineName }

/**
 * The engines asked for by `--engine chromium|firefox|webkit|all` (a comma
 * list works too). `all`, the default, is every engine installed here; one
 * that is missing is left out with a loud warning naming its install
 * command. One asked for by name must be installed.
 */
export function benchEngines(argv: string[] = process.argv): EngineName[] {
  const i = argv.findIndex((a) => a === '--engine' || a.startsWith('--engine='))
  const value = i < 0 ? 'all' : argv[i].includes('=') ? argv[i].slice('--engine='.length) : argv[i + 1]
  if (!value) throw new Error(`--engine needs a value: ${ENGINES.join('|')}|all`)
  if (value === 'all') {
    const found: EngineName[] = []
    for (const e of ENGINES) {
      const lacking = missingFiles(e)
      if (lacking.length === 0) found.push(e)
      else {
        const say = `${e}: not found (${lacking.join(', ')}); its columns are left out. Install it: ${INSTALL[e]}`
        const bar = '!'.repeat(Math.min(100, say.length + 4))
        console.warn(`\n${bar}\n! ${say}\n${bar}\n`)
      }
    }
    if (found.length === 0) throw new Error('no browser engine is installed')
    return found
  }
  const asked = value.split(',').map((s) => s.trim())
  for (const e of asked) {
    if (!(ENGINES as readonly string[]).includes(e)) throw new Error(`--engine: unknown engine "${e}" (known: ${ENGINES.join(', ')}, all)`)
    const lacking = missingFiles(e as EngineName)
    if (lacking.length) throw new Error(`--engine ${e}: not found (${lacking.join(', ')}). Install it: ${INSTALL[e as EngineName]}`)
  }
  return asked as EngineName[]
}

/**
 * A fresh Session (one new profile). Chromium may take flags of its own
 * (`chromiumFlags`, e.g. to measure memory at once); the other engines have
 * none to give, and use launch() as is.
 */
export async function benchSession(engine: EngineName, chromiumFlags: string[] = []): Promise<Session> {
  if (engine !== 'chromium' || chromiumFlags.length === 0) return launch(engine)
  const browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: [...CHROMIUM_ARGS, ...chromiumFlags] })
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } })
    return { engine, newTab: async () => playwrightTab(await context.newPage()), close: () => browser.close() }
  } catch (e) {
    await browser.close()
    throw e
  }
}

// The page's side of runInPage, plain JavaScript sent as source (a transform
// of a function passed to evaluate could refer to helpers the page lacks).
const START = `(function (name, args) {
  var run = { state: 'running', log: [], result: null, error: null, wake: null }
  window.__benchRun = run
  var wake = function () { if (run.wake) run.wake() }
  var push = function (line) { run.log.push(String(line)); wake() }
  window.benchLog = push
  if (!window.__benchErrorsHooked) {
    window.__benchErrorsHooked = true
    // A built site's page records its own errors (test/support/browsers/page-record.js); a dev-server page does it here.
    if (!window.__pageErrors) {
      window.addEventListener('error', function (e) { push('[page error] ' + ((e.error && e.error.stack) || e.message)) })
      window.addEventListener('unhandledrejection', function (e) { push('[page unhandled rejection] ' + ((e.reason && e.reason.stack) || e.reason)) })
      var consoleError = console.error
      console.error = function () { push('[page console.error] ' + Array.prototype.map.call(arguments, String).join(' ')); return consoleError.apply(console, arguments) }
    }
    var consoleWarn = console.warn
    console.warn = function () { push('[page console.warn] ' + Array.prototype.map.call(arguments, String).join(' ')); return consoleWarn.apply(console, arguments) }
  }
  Promise.resolve()
    .then(function () { return window[name].apply(window, args) })
    .then(
      function (r) { run.result = r; run.state = 'done'; wake() },
      function (e) { run.error = String((e && e.stack) || e); run.state = 'failed'; wake() }
    )
  return true
})`

// One long poll: resolves at the next log line, page error or end of the run, or after `slice` ms.
const POLL = `(function (slice) {
  var run = window.__benchRun
  if (!run) return { state: 'gone', log: [] }
  var errors = function () { return window.__pageErrors ? window.__pageErrors.splice(0).map(function (e) { return '[page] ' + e }) : [] }
  return new Promise(function (resolve) {
    var timer = null
    var take = function () {
      if (timer !== null) clearTimeout(timer)
      run.wake = null
      resolve({ state: run.state, log: run.log.splice(0).concat(errors()), result: run.state === 'done' ? run.result : null, error: run.error })
    }
    if (run.log.length || run.state !== 'running' || (window.__pageErrors && window.__pageErrors.length)) return take()
    run.wake = take
    timer = setTimeout(take, slice)
  })
})`

type Poll = { state: 'running' | 'done' | 'failed' | 'gone'; log: string[]; result: unknown; error: string | null }

/**
 * Runs `window[name](...args)` in the tab and follows it from Node until it
 * settles, printing its progress lines (window.benchLog) and the page's
 * errors as they come. Every engine alike: classic WebDriver (WebKit) gives
 * no console and no function exposed to the page, so the page keeps them and
 * Node asks, one long poll at a time (each a short call that returns at the
 * page's next line: the page is not woken between lines).
 */
export async function runInPage<R>(tab: Tab, name: string, args: unknown[], { timeoutMs, indent = '  ' }: { timeoutMs: number; indent?: string }): Promise<R> {
  const eval_ = <T>(src: string, a: unknown[]) => tab.evaluate((c: { src: string; a: unknown[] }) => (0, eval)(c.src)(c.a[0], c.a[1]) as T, { src, a })
  await eval_<boolean>(START, [name, args])
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const p = await eval_<Poll>(POLL, [2_000])
    for (const line of p.log) (line.startsWith('[page') ? console.error : console.log)(`${indent}${line}`)
    if (p.state === 'done') return p.result as R
    if (p.state === 'failed') throw new Error(`the page's ${name}() failed: ${p.error}`)
    if (p.state === 'gone') throw new Error(`the page's ${name}() run is gone (the page navigated or crashed)`)
    if (Date.now() > deadline) throw new Error(`the page's ${name}() did not finish within ${(timeoutMs / 60_000).toFixed(0)} min`)
  }
}

/** Waits until the page defines `window[name]` (its module ran); a page that failed to load says why. */
export async function waitForPage(tab: Tab, name: string, timeout = 120_000): Promise<void> {
  try {
    await waitForFunction(tab, (n: string) => typeof (window as unknown as Record<string, unknown>)[n] === 'function', name, { timeout, interval: 50, what: `window.${name}` })
  } catch (e) {
    const errors = await tab.evaluate(() => (window as unknown as { __pageErrors?: string[] }).__pageErrors ?? [], null).catch(() => [])
    throw new Error(`${errorText(e)}${errors.length ? `; the page's errors: ${errors.join(' | ')}` : ''}`)
  }
}

/** An engine's figure that it cannot give, and why (in tables and JSON alike). */
export interface NotAvailable {
  na: string
}
export const na = (why: string): NotAvailable => ({ na: why })
export const isNa = (x: unknown): x is NotAvailable => typeof x === 'object' && x !== null && 'na' in x

export const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e)).split('\n')[0].slice(0, 300)
