// The live replication inspector: reads its own slot's stream in the page,
// groups decoded messages by transaction with their LSNs, keeps each
// message's bytes for a hex view on demand, acknowledges every commit (so the
// primary can prune its change log), and counts transactions/s, changes/s and
// commit-to-frame latency.

import { dateFromPgTimestamp, formatLsn, replicate, type PgoutputMessage, type ReplicationStream, type XLogMessage } from '../src/client'
import { describe, kindName, type Relation } from './describe'
import { h, hexDump } from './dom'

/** Transactions kept on screen; older ones leave the DOM. */
const KEEP = 40
/** The window the rates are computed over. */
const RATE_WINDOW_MS = 10_000

interface CommitSample {
  at: number
  changes: number
  latencyMs: number
}

export class Inspector {
  private relations = new Map<number, Relation>()
  private group: HTMLElement | null = null
  private groupBody: HTMLElement | null = null
  private changes = 0
  private samples: CommitSample[] = []
  private totals = { transactions: 0, changes: 0, keepalives: 0 }
  private acked = '0/0'
  /** Called after each Commit frame (the primary's contents moved). */
  onCommit: () => void = () => {}

  constructor(
    private readonly list: HTMLElement,
    private readonly counters: HTMLElement,
  ) {
    this.list.append(h('div', { class: 'waiting' }, 'Waiting for the next commit: add a todo, or run SQL in the console.'))
    this.renderCounters()
    setInterval(() => this.renderCounters(), 1000) // rates decay while idle
  }

  /** Reads the stream to its end; replicate() acknowledges each commit once it is on screen. */
  async run(stream: ReplicationStream): Promise<void> {
    await replicate(stream, (msg, xlog) => this.onMessage(msg, xlog), {
      onApplied: (lsn) => {
        this.acked = formatLsn(lsn)
        this.renderCounters()
      },
      onKeepalive: () => this.totals.keepalives++,
    })
  }

  private onMessage(msg: PgoutputMessage, m: XLogMessage): void {
    if (msg.tag === 'R') this.relations.set(msg.relationOid, msg)
    if (msg.tag === 'B') this.openGroup(msg)
    const line = this.line(msg, m.walStart, m.data)
    if (this.groupBody) this.groupBody.append(line)
    else this.prepend(h('div', { class: 'txn standalone', 'data-testid': 'inspector-txn' }, line)) // a non-transactional message
    if (msg.tag === 'I' || msg.tag === 'U' || msg.tag === 'D' || msg.tag === 'T') this.changes++
    if (msg.tag === 'C') this.closeGroup(msg)
  }

  private openGroup(b: Extract<PgoutputMessage, { tag: 'B' }>): void {
    this.changes = 0
    this.groupBody = h('div', { class: 'txn-body' })
    this.group = h(
      'details',
      { class: 'txn open', 'data-testid': 'inspector-txn', open: true },
      h('summary', {}, h('span', { class: 'xid' }, `xid ${b.xid}`), h('span', { class: 'lsn' }, `commits at ${formatLsn(b.finalLsn)}`), h('span', { class: 'meta' }, 'streaming…')),
      this.groupBody,
    )
    this.prepend(this.group)
  }

  private prepend(el: HTMLElement): void {
    this.list.querySelector('.waiting')?.remove()
    this.list.prepend(el)
    while (this.list.children.length > KEEP) this.list.lastElementChild!.remove()
  }

  private closeGroup(c: Extract<PgoutputMessage, { tag: 'C' }>): void {
    const latencyMs = Math.max(0, Date.now() - dateFromPgTimestamp(c.commitTime).getTime())
    this.samples.push({ at: performance.now(), changes: this.changes, latencyMs })
    this.totals.transactions++
    this.totals.changes += this.changes
    const meta = this.group?.querySelector('.meta')
    if (meta) meta.textContent = `${this.changes} change${this.changes === 1 ? '' : 's'} · frame ${latencyMs} ms after commit`
    this.group?.classList.remove('open')
    if (this.list.children.length > 3) this.group?.removeAttribute('open')
    this.group = this.groupBody = null
    this.onCommit()
  }

  private line(m: PgoutputMessage, walStart: bigint, data: Uint8Array): HTMLElement {
    // Keep only this message's bytes, not the whole transferred batch buffer.
    const bytes = data.slice()
    const hex = h('pre', { class: 'hex', hidden: true })
    return h(
      'div',
      { class: `msg tag-${m.tag}`, title: 'click for the raw pgoutput bytes' },
      h('div', {
        class: 'msg-line',
        onclick: () => {
          if (!hex.textContent) hex.textContent = hexDump(bytes)
          hex.hidden = !hex.hidden
        },
      },
        h('span', { class: 'tag' }, `${m.tag} ${kindName(m)}`),
        h('span', { class: 'lsn' }, formatLsn(walStart)),
        h('span', { class: 'text' }, describe(m, this.relations)),
      ),
      hex,
    )
  }

  private renderCounters(): void {
    const now = performance.now()
    this.samples = this.samples.filter((s) => now - s.at <= RATE_WINDOW_MS)
    const seconds = RATE_WINDOW_MS / 1000
    const txps = this.samples.length / seconds
    const cps = this.samples.reduce((n, s) => n + s.changes, 0) / seconds
    const lat = this.samples.map((s) => s.latencyMs).sort((a, b) => a - b)
    const p50 = lat.length ? `${lat[Math.floor(lat.length / 2)]} ms` : '–'
    const cells: [string, string][] = [
      ['transactions/s', txps.toFixed(1)],
      ['changes/s', cps.toFixed(1)],
      ['commit → frame p50', p50],
      ['transactions', String(this.totals.transactions)],
      ['changes', String(this.totals.changes)],
      ['keepalives', String(this.totals.keepalives)],
      ['acknowledged', this.acked],
    ]
    this.counters.replaceChildren(...cells.map(([k, v]) => h('div', { class: 'counter' }, h('span', { class: 'v' }, v), h('span', { class: 'k' }, k))))
  }
}
