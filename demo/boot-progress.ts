// What the page is doing until the database first answers. A first visit
// fetches the template and starts PostgreSQL in WASM: seconds on a slow
// machine, which a bare "opening…" would leave unexplained. Each step shows
// as it starts (the worker's boot phases via openDatabase's onProgress, then
// the page's own first queries) with its time; once the todo list has been
// read the whole thing folds into one line whose details keep the times.
//
// Times are the page's clock, from this module's start: what the visitor
// waited, worker loading included.

import type { BootProgress } from '../src/client'
import { h } from './dom'

/** In order. */
const STEPS = ['worker', 'lock', 'registry', 'pglite', 'install', 'schema', 'todos'] as const
export type Step = (typeof STEPS)[number]

const LABELS: Record<Step, string> = {
  worker: 'loading the database worker',
  lock: 'waiting for the database name lock',
  registry: "checking this browser's databases",
  pglite: 'starting PostgreSQL (WASM) from the database template',
  install: 'installing change capture',
  schema: 'first query: the todo table and its publication',
  todos: 'reading the todo list',
}

const seconds = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`)

export class BootProgressView {
  private readonly t0 = performance.now()
  private current = -1
  private started = 0
  private readonly items = new Map<Step, HTMLLIElement>()
  private readonly bar = h('div', { class: 'boot-fill' })
  private readonly meter = h(
    'div',
    { class: 'boot-bar', role: 'progressbar', 'aria-label': 'starting the database', 'aria-valuemin': 0, 'aria-valuemax': STEPS.length },
    this.bar,
  )
  /** The current step's words only: a live region that ticked every 200 ms would talk over everything. */
  private readonly now = h('span', { class: 'boot-now', 'aria-live': 'polite' })
  private readonly clock = h('span', { class: 'boot-time', 'aria-hidden': 'true' })
  private readonly list = h('ol', { class: 'boot-steps' })
  private readonly timer: ReturnType<typeof setInterval>

  /** `root` is the static placeholder in index.html (shown before any script runs). */
  constructor(private readonly root: HTMLElement) {
    root.replaceChildren(h('div', { class: 'boot-head' }, this.now, this.clock), this.meter, this.list)
    const tick = () => (this.clock.textContent = seconds(performance.now() - this.t0))
    tick()
    this.timer = setInterval(tick, 200)
    this.step('worker')
  }

  /** For openDatabase's onProgress. 'ready' is left to the page: it calls step('schema') once the open resolved. */
  readonly onProgress = (p: BootProgress): void => {
    if (p.phase !== 'ready') this.step(p.phase)
  }

  /**
   * Starts `step`, ending the current one. Steps only move forward: progress
   * calls come over their own port and may land after the open resolved.
   */
  step(step: Step, label = LABELS[step]): void {
    // A takeover later in the page's life boots this tab's worker: not the page's boot.
    if (this.root.dataset.phase === 'done') return
    const i = STEPS.indexOf(step)
    // Also a repeat: the second tab's retry starts at 'lock' again, keeping the words relabel gave it.
    if (i <= this.current) return
    const t = performance.now()
    const previous = this.current >= 0 ? this.items.get(STEPS[this.current]) : undefined
    if (previous) this.finish(previous, t)
    this.current = i
    this.started = t
    const li = h('li', { class: 'active', 'data-testid': 'boot-step', 'data-phase': step }, h('span', { class: 'label' }, label), h('span', { class: 't' }, ''))
    this.items.set(step, li)
    this.list.append(li)
    this.root.dataset.phase = step
    this.now.textContent = `${label}…`
    this.bar.style.width = `${Math.round(((i + 1) / STEPS.length) * 100)}%`
    this.meter.setAttribute('aria-valuenow', String(i + 1))
    this.meter.setAttribute('aria-valuetext', label)
  }

  /** New words for a step already shown (the second tab's wait for the lock). */
  relabel(step: Step, label: string): void {
    const li = this.items.get(step)
    if (!li) return this.step(step, label)
    li.querySelector('.label')!.textContent = label
    if (STEPS[this.current] === step) {
      this.now.textContent = `${label}…`
      this.meter.setAttribute('aria-valuetext', label)
    }
  }

  /** The database answered: fold into one line; the steps stay under it. */
  done(summary: string): void {
    const t = performance.now()
    const last = this.items.get(STEPS[this.current])
    if (last) this.finish(last, t)
    clearInterval(this.timer)
    const details = h('details', {}, h('summary', { class: 'boot-now', 'aria-live': 'polite' }, `${summary} (in ${seconds(t - this.t0)})`), this.list)
    this.root.replaceChildren(details)
    this.root.classList.add('done')
    this.root.dataset.phase = 'done'
  }

  failed(): void {
    clearInterval(this.timer)
    this.root.classList.add('failed')
    this.root.dataset.phase = 'failed'
    this.now.textContent = `stopped while ${this.now.textContent?.replace(/…$/, '')}`
  }

  private finish(li: HTMLLIElement, t: number): void {
    li.className = 'done'
    li.querySelector('.t')!.textContent = seconds(t - this.started)
  }
}
