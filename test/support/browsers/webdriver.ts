// WebKit through webdriverio over classic WebDriver (./driver.ts): WebKitGTK's
// WebKitWebDriver starts its MiniBrowser (--automation: a fresh, ephemeral
// profile per session) on an Xvfb display of its own, since MiniBrowser has
// no headless mode.
//
// Classic WebDriver has one current window per session: every call of a Tab
// switches to its window first, one call at a time (a queue), so tabs used
// at once take turns.

import { spawn, type ChildProcess } from 'node:child_process'
import { remote } from 'webdriverio'
import { chord, type LaunchOptions, type Session, type Tab } from './driver.ts'
import { webkit } from './engines.ts'
import { freePort } from '../free-port.ts'

type Browser = Awaited<ReturnType<typeof remote>>

/** Starts Xvfb on the first free display; resolves with the display and the process. */
function startXvfb(): Promise<{ display: string; proc: ChildProcess }> {
  return new Promise((resolve, reject) => {
    // -displayfd: Xvfb picks a free display and writes its number on fd 3 once it accepts connections.
    const proc = spawn(webkit.xvfb, ['-displayfd', '3', '-screen', '0', '1600x1200x24', '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] })
    let err = ''
    proc.stderr!.on('data', (d) => (err += d))
    proc.once('error', reject)
    proc.once('exit', (code) => reject(new Error(`Xvfb exited (${code}) before it was ready: ${err.slice(-500)}`)))
    let out = ''
    proc.stdio[3]!.on('data', (d) => {
      out += d
      if (out.includes('\n')) resolve({ display: `:${out.trim()}`, proc })
    })
  })
}

/** Starts WebKitWebDriver on a free port; resolves once it answers /status (it prints nothing when it listens). */
async function startDriver(display: string): Promise<{ port: number; proc: ChildProcess }> {
  const port = await freePort()
  // Its own process group: MiniBrowser and WebKit's helper processes are its children, stopped with it.
  const proc = spawn(webkit.driver, [`--port=${port}`], { env: { ...process.env, DISPLAY: display }, stdio: ['ignore', 'ignore', 'pipe'], detached: true })
  let err = ''
  proc.stderr!.on('data', (d) => (err += d))
  const exited = new Promise<never>((_, reject) => {
    proc.once('error', reject)
    proc.once('exit', (code) => reject(new Error(`WebKitWebDriver exited (${code}) before it answered: ${err.slice(-500)}`)))
  })
  exited.catch(() => {}) // raced below; after that its exit is the session's end
  const deadline = Date.now() + 30_000
  for (let backoff = 10; ; backoff = Math.min(backoff * 2, 200)) {
    const ok = await Promise.race([
      fetch(`http://127.0.0.1:${port}/status`).then(
        (r) => r.ok,
        () => false,
      ),
      exited,
    ])
    if (ok) return { port, proc }
    if (Date.now() > deadline) {
      stopGroup(proc)
      throw new Error(`WebKitWebDriver did not answer on port ${port} within 30 s: ${err.slice(-500)}`)
    }
    // Not listening yet: the next try after a growing pause (a connection refused returns at once).
    await new Promise((r) => setTimeout(r, backoff))
  }
}

function stopGroup(proc: ChildProcess | undefined): void {
  if (!proc?.pid || proc.exitCode !== null) return
  try {
    process.kill(-proc.pid, 'SIGTERM')
  } catch {
    proc.kill('SIGTERM')
  }
}

export async function launchWebKit(_opts: LaunchOptions = {}): Promise<Session> {
  let xvfb: ChildProcess | undefined
  let driver: ChildProcess | undefined
  let browser: Browser | undefined
  const stop = () => {
    stopGroup(driver)
    xvfb?.kill('SIGTERM')
  }
  try {
    const x = await startXvfb()
    xvfb = x.proc
    const d = await startDriver(x.display)
    driver = d.proc
    browser = await remote({
      hostname: '127.0.0.1',
      port: d.port,
      logLevel: 'warn',
      connectionRetryTimeout: 600_000,
      capabilities: {
        browserName: 'MiniBrowser',
        'wdio:enforceWebDriverClassic': true,
        // DOMContentLoaded: module scripts have run (a page from the back/forward cache fires none of it).
        pageLoadStrategy: 'eager',
        'webkitgtk:browserOptions': { binary: webkit.miniBrowser, args: ['--automation'] },
      } as WebdriverIO.Capabilities,
    })
    // A page's own waits are bounded; the script timeout is not the one that should fire.
    await browser.setTimeout({ script: 3_600_000, pageLoad: 300_000 })
  } catch (e) {
    await browser?.deleteSession().catch(() => {}) // the driver is stopped next either way
    stop()
    throw e
  }
  const b = browser
  let queue: Promise<unknown> = Promise.resolve()
  /** One WebDriver call at a time (a failed one does not stop the next). */
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn)
    queue = run.catch(() => {})
    return run
  }
  const inTurn = <T>(handle: string, fn: () => Promise<T>): Promise<T> =>
    serial(async () => {
      await b.switchToWindow(handle)
      return fn()
    })
  let spare: string | undefined = await b.getWindowHandle()

  const tab = (handle: string): Tab => {
    const el = (css: string) => b.$(css)
    return {
      goto: (url) => inTurn(handle, () => b.url(url).then(() => {})),
      reload: () => inTurn(handle, () => b.refresh()),
      // By script: WebKitWebDriver's Back and Forward wait for a load that a page restored
      // from the back/forward cache never reports. The next calls wait on the page as it comes.
      back: () => inTurn(handle, () => b.execute(() => void setTimeout(() => history.back()))),
      forward: () => inTurn(handle, () => b.execute(() => void setTimeout(() => history.forward()))),
      url: () => inTurn(handle, () => b.getUrl()),
      evaluate: (fn, arg) => inTurn(handle, () => b.execute(fn as never, arg as never) as never),
      click: (css) => inTurn(handle, async () => (await el(css)).click()),
      hover: (css) => inTurn(handle, async () => (await el(css)).moveTo()),
      fill: (css, value) => inTurn(handle, async () => (await el(css)).setValue(value)),
      press: (css, keys) =>
        inTurn(handle, async () => {
          // Focus without a click: the pointer stays where it is.
          await b.execute((sel: string) => (document.querySelector(sel) as HTMLElement).focus(), css)
          await b.keys(chord(keys))
        }),
      moveMouse: (x, y) => inTurn(handle, () => b.action('pointer').move({ x: Math.round(x), y: Math.round(y), origin: 'viewport' }).perform()),
      setViewport: (width, height) =>
        inTurn(handle, async () => {
          // The window's size includes MiniBrowser's own chrome: measure it, then size the window around the viewport.
          await b.setWindowSize(width, height)
          const inner = await b.execute(() => [window.innerWidth, window.innerHeight])
          await b.setWindowSize(width + (width - inner[0]), height + (height - inner[1]))
        }),
      // WebKitWebDriver never answers a screenshot of a hidden tab (a background one): none is taken then.
      screenshot: (path) =>
        inTurn(handle, async () => {
          if ((await b.execute(() => document.visibilityState)) === 'hidden') return console.warn(`webkit: no screenshot ${path}: the tab is in the background`)
          await b.saveScreenshot(path)
        }),
      close: () => inTurn(handle, () => b.closeWindow().then(() => {})),
    }
  }

  return {
    engine: 'webkit',
    async newTab() {
      if (spare) {
        const h = spare
        spare = undefined
        return tab(h)
      }
      // The New Window command, not window.open: a tab opened by script has an opener, which keeps it out of the back/forward cache.
      const { handle } = await serial(() => b.createWindow('tab'))
      return tab(handle)
    },
    async close() {
      // A call that hangs in the driver must not hold the end: bounded, then everything is stopped by PID.
      let timer: NodeJS.Timeout | undefined
      const bounded = new Promise<void>((r) => (timer = setTimeout(r, 10_000)))
      await Promise.race([queue.then(() => b.deleteSession()).catch(() => {}), bounded])
      clearTimeout(timer)
      stop()
    },
  }
}
