// Playwright's page and locator vocabulary, in every engine: the part the e2e
// tests use, over a Tab (./driver.ts). Elements are found in the page by
// ./page-agent.js; an action marks the one element found and hands its
// selector to the engine's tool, so clicks, hovers and keys are real input
// events. What waits, waits in the page for the DOM (./driver.ts's
// waitForFunction), bounded by a timeout, as Playwright's auto-waiting does.
//
// What the page does not get from the tool alike (uncaught errors, console
// errors, a download, a chosen file) it records or gets in the page itself.

import { readFileSync } from 'node:fs'
import { basename } from 'node:path'
import { waitForFunction, type PageFunction, type Tab } from './driver.ts'

const AGENT = readFileSync(new URL('./page-agent.js', import.meta.url), 'utf8')
/** Playwright's default for a wait that names none. */
const DEFAULT_TIMEOUT_MS = 30_000

type Pattern = { s: string } | { re: string; flags: string }
type Step =
  | { kind: 'css'; css: string }
  | { kind: 'testId'; id: string }
  | { kind: 'role'; role: string; name?: Pattern; exact?: boolean }
  | { kind: 'text'; p: Pattern; exact: boolean }
  | { kind: 'hasText'; p: Pattern }
  | { kind: 'has'; steps: Step[] }
  | { kind: 'nth'; i: number }

const pattern = (p: string | RegExp): Pattern => (typeof p === 'string' ? { s: p } : { re: p.source, flags: p.flags })

interface AgentCall {
  agent: string
  steps: Step[]
  describe: string
  src?: string
  arg?: unknown
}

/** The agent's functions, in the page. */
interface Agent {
  resolve(steps: Step[]): Element[]
  one(steps: Step[], describe: string): Element | null
  pick(steps: Step[], describe: string, hiddenToo?: boolean): string | null
  visible(el: Element): boolean
  norm(s: string | null): string
}

export class Locator {
  constructor(
    private readonly page: Page,
    private readonly steps: Step[],
  ) {}

  private and(...more: Step[]): Locator {
    return new Locator(this.page, [...this.steps, ...more])
  }

  toString(): string {
    return JSON.stringify(this.steps)
  }

  locator(css: string, opts: { hasText?: string | RegExp } = {}): Locator {
    return opts.hasText === undefined ? this.and({ kind: 'css', css }) : this.and({ kind: 'css', css }, { kind: 'hasText', p: pattern(opts.hasText) })
  }

  getByTestId(id: string): Locator {
    return this.and({ kind: 'testId', id })
  }

  getByText(text: string | RegExp, opts: { exact?: boolean } = {}): Locator {
    return this.and({ kind: 'text', p: pattern(text), exact: opts.exact ?? false })
  }

  getByRole(role: string, opts: { name?: string | RegExp; exact?: boolean } = {}): Locator {
    return this.and({ kind: 'role', role, name: opts.name === undefined ? undefined : pattern(opts.name), exact: opts.exact })
  }

  filter(opts: { hasText?: string | RegExp; has?: Locator }): Locator {
    const more: Step[] = []
    if (opts.hasText !== undefined) more.push({ kind: 'hasText', p: pattern(opts.hasText) })
    if (opts.has) more.push({ kind: 'has', steps: opts.has.steps })
    return this.and(...more)
  }

  first(): Locator {
    return this.and({ kind: 'nth', i: 0 })
  }

  nth(i: number): Locator {
    return this.and({ kind: 'nth', i })
  }

  private call(): AgentCall {
    return { agent: AGENT, steps: this.steps, describe: this.toString() }
  }

  /** How many elements match now (no wait). */
  count(): Promise<number> {
    return this.page.tab.evaluate(
      (c: AgentCall) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        return (window as unknown as { __e2eAgent: Agent }).__e2eAgent.resolve(c.steps).length
      },
      this.call(),
    )
  }

  /** Every match's textContent now (no wait). */
  allTextContents(): Promise<string[]> {
    return this.page.tab.evaluate(
      (c: AgentCall) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        return (window as unknown as { __e2eAgent: Agent }).__e2eAgent.resolve(c.steps).map((e) => e.textContent ?? '')
      },
      this.call(),
    )
  }

  /** True when nothing matches or the match is not visible (no wait). */
  isHidden(): Promise<boolean> {
    return this.page.tab.evaluate(
      (c: AgentCall) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        const agent = (window as unknown as { __e2eAgent: Agent }).__e2eAgent
        const el = agent.one(c.steps, c.describe)
        return !el || !agent.visible(el)
      },
      this.call(),
    )
  }

  /** Runs `fn(element, arg)` in the page once exactly one element matches (waiting for it). */
  async evaluate<R, A = undefined>(fn: (el: Element, arg: A) => R, arg?: A, opts: { timeout?: number } = {}): Promise<R> {
    const got = await waitForFunction(
      this.page.tab,
      (c: AgentCall) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        const el = (window as unknown as { __e2eAgent: Agent }).__e2eAgent.one(c.steps, c.describe)
        if (!el) return null
        return { v: (new Function(`return (${c.src})`)() as (e: Element, a: unknown) => unknown)(el, c.arg) }
      },
      { ...this.call(), src: fn.toString(), arg },
      { timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS, what: this.toString() },
    )
    return got.v as R
  }

  textContent(opts: { timeout?: number } = {}): Promise<string | null> {
    return this.evaluate((e) => e.textContent, undefined, opts)
  }

  getAttribute(name: string, opts: { timeout?: number } = {}): Promise<string | null> {
    return this.evaluate((e, n) => e.getAttribute(n), name, opts)
  }

  isEnabled(): Promise<boolean> {
    return this.evaluate((e) => !(e as HTMLButtonElement).disabled)
  }

  /** Waits until exactly one element matches and is visible ('visible', the default), or none is ('hidden'). */
  async waitFor(opts: { timeout?: number; state?: 'visible' | 'hidden' } = {}): Promise<void> {
    await waitForFunction(
      this.page.tab,
      (c: AgentCall & { arg: string }) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        const agent = (window as unknown as { __e2eAgent: Agent }).__e2eAgent
        const el = agent.one(c.steps, c.describe)
        return c.arg === 'hidden' ? !el || !agent.visible(el) : !!el && agent.visible(el)
      },
      { ...this.call(), arg: opts.state ?? 'visible' },
      { timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS, what: `${this.toString()} ${opts.state ?? 'visible'}` },
    )
  }

  /**
   * The one element, enabled and (unless `hiddenToo`: a file input is often
   * hidden behind its label, and Playwright sets its files all the same)
   * visible, as a selector the engine's tool can act on.
   */
  private picked(timeout = DEFAULT_TIMEOUT_MS, hiddenToo = false): Promise<string> {
    return waitForFunction(
      this.page.tab,
      (c: AgentCall) => {
        if (!(window as unknown as { __e2eAgent?: Agent }).__e2eAgent) (0, eval)(c.agent)
        return (window as unknown as { __e2eAgent: Agent }).__e2eAgent.pick(c.steps, c.describe, c.arg === true)
      },
      { ...this.call(), arg: hiddenToo },
      { timeout, what: `${this.toString()} to act on` },
    )
  }

  /**
   * Acts on the element found; if the page replaced it between the finding
   * and the act (a panel re-rendered), finds it again, as Playwright does.
   */
  private async act(what: (css: string) => Promise<void>): Promise<void> {
    const deadline = Date.now() + DEFAULT_TIMEOUT_MS
    for (;;) {
      const css = await this.picked(Math.max(1_000, deadline - Date.now()))
      try {
        return await what(css)
      } catch (e) {
        const gone = await this.page.tab.evaluate((c: string) => document.querySelector(c) === null, css).catch(() => true)
        if (!gone || Date.now() >= deadline) throw e
      }
    }
  }

  async click(): Promise<void> {
    await this.act((css) => this.page.tab.click(css))
  }

  async hover(): Promise<void> {
    await this.act((css) => this.page.tab.hover(css))
  }

  /** Ticks a checkbox (a click), unless it is ticked already. */
  async check(): Promise<void> {
    if (await this.evaluate((e) => (e as HTMLInputElement).checked)) return
    await this.click()
    if (!(await this.evaluate((e) => (e as HTMLInputElement).checked))) throw new Error(`${this.toString()}: not checked after a click`)
  }

  async press(keys: string): Promise<void> {
    await this.act((css) => this.page.tab.press(css, keys))
  }

  /** Replaces the value and fires 'input', as Playwright's fill does. */
  async fill(value: string): Promise<void> {
    const css = await this.picked()
    await this.page.tab.evaluate(
      ({ css, value }) => {
        const el = document.querySelector(css) as HTMLInputElement | HTMLTextAreaElement
        el.focus()
        // The prototype's setter: what a framework watching `value` sees as a user's edit.
        Object.getOwnPropertyDescriptor(Object.getPrototypeOf(el), 'value')!.set!.call(el, value)
        el.dispatchEvent(new Event('input', { bubbles: true }))
      },
      { css, value },
    )
  }

  /** Chooses a file in an <input type=file> (its content read here), and fires 'change'. */
  async setInputFiles(path: string): Promise<void> {
    const css = await this.picked(DEFAULT_TIMEOUT_MS, true)
    await this.page.tab.evaluate(
      ({ css, name, text }) => {
        const input = document.querySelector(css) as HTMLInputElement
        const files = new DataTransfer()
        files.items.add(new File([text], name))
        input.files = files.files
        input.dispatchEvent(new Event('change', { bubbles: true }))
      },
      { css, name: basename(path), text: readFileSync(path, 'utf8') },
    )
  }
}

/** What a download started by an <a download> click held. */
export interface Download {
  name: string
  text: string
}

export class Page {
  readonly mouse: { move(x: number, y: number): Promise<void> }
  private readonly root: Locator

  constructor(readonly tab: Tab) {
    this.root = new Locator(this, [])
    this.mouse = { move: (x, y) => tab.moveMouse(x, y) }
  }

  goto(url: string): Promise<void> {
    return this.tab.goto(url)
  }

  reload(): Promise<void> {
    return this.tab.reload()
  }

  goBack(): Promise<void> {
    return this.tab.back()
  }

  goForward(): Promise<void> {
    return this.tab.forward()
  }

  url(): Promise<string> {
    return this.tab.url()
  }

  close(): Promise<void> {
    return this.tab.close()
  }

  screenshot(path: string): Promise<void> {
    return this.tab.screenshot(path)
  }

  setViewportSize({ width, height }: { width: number; height: number }): Promise<void> {
    return this.tab.setViewport(width, height)
  }

  evaluate<R, A = undefined>(fn: PageFunction<A, R>, arg?: A): Promise<R> {
    return this.tab.evaluate(fn, arg as A)
  }

  waitForFunction<R, A = undefined>(fn: PageFunction<A, R>, arg?: A, opts: { timeout?: number; polling?: number } = {}): Promise<NonNullable<R>> {
    return waitForFunction(this.tab, fn, arg as A, { timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS, interval: opts.polling })
  }

  locator(css: string, opts: { hasText?: string | RegExp } = {}): Locator {
    return this.root.locator(css, opts)
  }

  getByTestId(id: string): Locator {
    return this.root.getByTestId(id)
  }

  getByText(text: string | RegExp, opts: { exact?: boolean } = {}): Locator {
    return this.root.getByText(text, opts)
  }

  getByRole(role: string, opts: { name?: string | RegExp; exact?: boolean } = {}): Locator {
    return this.root.getByRole(role, opts)
  }

  waitForSelector(css: string, opts: { timeout?: number } = {}): Promise<void> {
    return this.root.locator(css).waitFor(opts)
  }

  /** Waits until the page's URL is `url`, or matches it. */
  async waitForURL(url: string | RegExp, opts: { timeout?: number } = {}): Promise<void> {
    const p = pattern(url)
    await waitForFunction(
      this.tab,
      (p: Pattern) => ('re' in p ? new RegExp(p.re, p.flags).test(location.href) : location.href === p.s),
      p,
      { timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS, what: `the URL ${String(url)}` },
    )
  }

  /**
   * Clicks `trigger` and returns what the <a download> click it makes would
   * have saved: the file's name and its text, read from its blob: URL in the
   * page (no engine's tool catches a download alike; WebDriver none).
   */
  async download(trigger: Locator, opts: { timeout?: number } = {}): Promise<Download> {
    await this.tab.evaluate(() => {
      const w = window as unknown as { __e2eDownload?: Promise<{ name: string; text: string }> }
      const original = HTMLAnchorElement.prototype.click
      w.__e2eDownload = new Promise((resolve, reject) => {
        HTMLAnchorElement.prototype.click = function (this: HTMLAnchorElement) {
          if (!this.download) return original.call(this)
          HTMLAnchorElement.prototype.click = original
          fetch(this.href)
            .then((r) => r.text())
            .then((text) => resolve({ name: this.download, text }), reject)
        }
      })
    }, undefined)
    await trigger.click()
    return this.waitForFunction(
      () => {
        const w = window as unknown as { __e2eDownload: Promise<{ name: string; text: string }>; __e2eDownloaded?: { name: string; text: string } }
        void w.__e2eDownload.then((d) => (w.__e2eDownloaded = d))
        return w.__e2eDownloaded ?? null
      },
      undefined,
      { timeout: opts.timeout ?? DEFAULT_TIMEOUT_MS },
    )
  }

  /** The page's own record of its uncaught errors and console errors (./page-record.ts), oldest first. */
  errors(): Promise<string[]> {
    return this.tab.evaluate(() => (window as unknown as { __pageErrors?: string[] }).__pageErrors ?? [], undefined)
  }
}
