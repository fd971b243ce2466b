// The live replication inspector: reads its own slot's stream in the page,
// groups decoded messages by transaction with their LSNs, keeps each
// message's bytes for a hex view on demand, acknowledges every commit (so the
// primary can prune its change log), and counts transactions/s, changes/s and
// commit-to-frame latency.

import { dateFromPgTimestamp, formatLsn, replicate, type PgoutputMessage, type ReplicationStream, type XLogMessage } from '../src/client'
import { changeSummary, describe, kindName, meaning, type Relation } from './describe'
import { h, hexDump } from './dom'

/** Transactions kept on screen; older ones leave the DOM. */
const KEEP = 40
/** Messages shown per transaction; the rest are counted (a 5,000-row insert stays a few hundred elements). */
const LINES_PER_TXN = 50
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
  /** The last transaction shown open: folded when the next one commits. */
  private previous: HTMLElement | null = null
  private changes = 0
  /** The open transaction's messages shown, hidden, and counted by kind and table. */
  private shown = 0
  private hidden = 0
  private counts = new Map<string, number>()
  private samples: CommitSample[] = []
  private totals = { transactions: 0, changes: 0, keepalives: 0 }
  private acked = '0/0'
  /** Called after each Commit frame (the primary's contents moved). */
  onCommit: () => void = () => {}

  constructor(
    private readonly list: HTMLElement,
    private readonly counters: HTMLElement,
  ) {
    this.list.replaceChildren(h('div', { class: 'waiting' }, 'Waiting for the next commit: add a todo, or run SQL in the console.'))
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
    if (msg.tag === 'I' || msg.tag === 'U' || msg.tag === 'D' || msg.tag === 'T' || msg.tag === 'M') {
      if (msg.tag !== 'M') this.changes++
      const table = msg.tag === 'T' ? msg.relationOids.map((o) => this.tableName(o)).join(', ') : msg.tag === 'M' ? '' : this.tableName(msg.relationOid)
      const key = `${msg.tag} ${table}`
      this.counts.set(key, (this.counts.get(key) ?? 0) + 1)
    }
    if (!this.groupBody) {
      this.prepend(h('div', { class: 'txn standalone', 'data-testid': 'inspector-txn' }, this.line(msg, m.walStart, m.data))) // a non-transactional message
    } else if (this.shown < LINES_PER_TXN || msg.tag === 'C') {
      this.shown++
      this.groupBody.append(this.line(msg, m.walStart, m.data))
    } else {
      this.hidden++
    }
    if (msg.tag === 'C') this.closeGroup(msg)
  }

  private tableName(oid: number): string {
    const r = this.relations.get(oid)
    return r ? `${r.namespace}.${r.relation}` : `relation ${oid}`
  }

  private openGroup(b: Extract<PgoutputMessage, { tag: 'B' }>): void {
    this.changes = 0
    this.shown = 0
    this.hidden = 0
    this.counts = new Map()
    this.groupBody = h('div', { class: 'txn-body' })
    this.group = h(
      'details',
      { class: 'txn open', 'data-testid': 'inspector-txn', open: true },
      h(
        'summary',
        { onclick: (ev: Event) => ((ev.currentTarget as HTMLElement).parentElement!.dataset.byHand = 'true') },
        h('span', { class: 'xid', title: 'the transaction id (xid) on the primary' }, `xid ${b.xid}`),
        h('span', { class: 'lsn', title: 'the LSN, position in the write-ahead log, of its commit' }, `commits at ${formatLsn(b.finalLsn)}`),
        h('span', { class: 'meta' }, 'streaming…'),
      ),
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
    if (meta) meta.textContent = `${changeSummary(this.counts)} · frame ${latencyMs} ms after commit`
    if (this.hidden > 0) {
      // Before the Commit line, which is always shown.
      this.groupBody?.lastElementChild?.before(h('div', { class: 'more', 'data-testid': 'inspector-more' }, `… ${this.hidden} more message${this.hidden === 1 ? '' : 's'} of this transaction not shown`))
    }
    this.group?.classList.remove('open')
    // The newest transaction stays open; the one before it folds (to its summary line), unless the reader is on
    // it: the pointer over it, or opened or closed by hand. A commit arriving must not fold what is being read.
    const previous = this.previous
    if (previous && !previous.matches(':hover') && !previous.dataset.byHand) previous.removeAttribute('open')
    this.previous = this.group
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
        // PostgreSQL sends Relation and Type messages with no WAL position (XLogData's start is 0/0).
        walStart === 0n
          ? h('span', { class: 'lsn', title: 'sent with no WAL position (0/0): a Relation or Type message describes, it is not a change' }, '—')
          : h('span', { class: 'lsn', title: 'where this message is in the WAL (log sequence number)' }, formatLsn(walStart)),
        h('span', { class: 'text', title: `${meaning(m)} Click for its raw bytes.` }, describe(m, this.relations)),
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
    const cells: [string, string, string][] = [
      ['transactions/s', txps.toFixed(1), 'committed transactions received per second, over the last 10 s'],
      ['changes/s', cps.toFixed(1), 'inserted, updated, deleted or truncated rows received per second, over the last 10 s'],
      ['commit → frame p50', p50, 'median time from a commit on the primary to its Commit message here'],
      ['transactions', String(this.totals.transactions), 'transactions received since the page opened'],
      ['changes', String(this.totals.changes), 'row changes received since the page opened'],
      ['keepalives', String(this.totals.keepalives), 'keepalive messages: the primary saying where its WAL ends while nothing else is sent'],
      ['acknowledged', this.acked, 'the LSN (position in the write-ahead log) this consumer confirmed: the primary may forget what is before it'],
    ]
    this.counters.replaceChildren(...cells.map(([k, v, t]) => h('div', { class: 'counter', title: t }, h('span', { class: 'v' }, v), h('span', { class: 'k' }, k))))
  }
}
