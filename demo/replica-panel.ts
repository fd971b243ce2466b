// The replica's panel: per published table, the primary's and the replica's
// row count and checksum side by side, equal once the replica caught up.

import { PgError, type Database } from '../src/client'
import { checksums, type TableChecksum, type TableRef, type TableRows } from './checksum'
import { h } from './dom'

export interface ReplicaView {
  checksums(tables: TableRef[]): Promise<TableChecksum[]>
  rows(table: TableRef, limit: number): Promise<TableRows | null>
}

/** Rows of the replica shown per opened table. */
const SHOWN_ROWS = 20

/** Each side's column heading; a narrow screen hides the heading and labels each cell with it instead. */
const SIDE = { primary: 'primary (IndexedDB)', replica: 'replica (memory)' }

const short = (c: TableChecksum) => (c.rows === null ? 'missing' : `${c.rows} row${c.rows === 1 ? '' : 's'} · ${c.md5!.slice(0, 8)}`)

export class ReplicaPanel {
  private pending: Promise<void> | null = null
  private again = false
  /** Tables whose replica rows are shown ("schema.name"), kept open across refreshes. */
  private readonly open = new Set<string>()

  constructor(
    private readonly primary: Database,
    private readonly replica: ReplicaView,
    private readonly publication: string,
    private readonly table: HTMLElement,
  ) {}

  /** Recompute both sides; calls made while one runs share the next run. */
  refresh(): Promise<void> {
    if (this.pending) {
      this.again = true
      return this.pending
    }
    this.pending = (async () => {
      try {
        do {
          this.again = false
          try {
            await this.compute()
          } catch (e) {
            // A table dropped between listing the tables and reading them: list again.
            if (!(e instanceof PgError && e.code === '42P01')) throw e
            this.again = true
          }
        } while (this.again)
      } finally {
        this.pending = null
      }
    })()
    return this.pending
  }

  private async compute(): Promise<void> {
    const { rows } = await this.primary.query<TableRef>(
      'SELECT schemaname AS schema, tablename AS name FROM pg_publication_tables WHERE pubname = $1 ORDER BY 1, 2',
      [this.publication],
    )
    const [left, right] = await Promise.all([checksums(this.primary, rows), this.replica.checksums(rows)])
    const body: HTMLElement[] = []
    for (const [i, p] of left.entries()) {
      const r = right[i]
      const key = `${p.schema}.${p.name}`
      const equal = p.rows === r.rows && p.md5 === r.md5
      const toggle = h(
        'button',
        { class: 'link', 'data-testid': 'checksum-rows', 'aria-expanded': String(this.open.has(key)), onclick: () => this.toggle(key) },
        this.open.has(key) ? 'hide rows' : 'rows',
      )
      body.push(
        h(
          'tr',
          { 'data-testid': 'checksum-row', 'data-table': key, 'data-equal': String(equal), class: `checksum ${equal ? 'equal' : 'differs'}` },
          h('td', {}, key, ' ', toggle),
          h('td', { class: 'mono', 'data-testid': 'checksum-primary', 'data-side': SIDE.primary }, short(p)),
          h('td', { class: 'mono', 'data-testid': 'checksum-replica', 'data-side': SIDE.replica }, short(r)),
          h('td', { class: 'state', 'data-testid': 'checksum-state' }, equal ? '✓ equal' : '… catching up'),
        ),
      )
      if (this.open.has(key)) body.push(h('tr', { class: 'replica-rows' }, h('td', { colspan: 4 }, rowsView(await this.replica.rows(p, SHOWN_ROWS)))))
    }
    this.table.replaceChildren(
      h('thead', {}, h('tr', {}, h('th', {}, 'table'), h('th', {}, SIDE.primary), h('th', {}, SIDE.replica), h('th', {}, ''))),
      h('tbody', {}, ...body),
    )
  }

  private toggle(key: string): void {
    if (!this.open.delete(key)) this.open.add(key)
    void this.refresh()
  }
}

/** The replica's rows of one table, as a small table (its first SHOWN_ROWS rows). */
function rowsView(t: TableRows | null): HTMLElement {
  if (!t) return h('div', { class: 'muted' }, 'not on the replica (yet)')
  return h(
    'div',
    { class: 'replica-sample', 'data-testid': 'replica-rows' },
    h(
      'table',
      { class: 'result' },
      h('thead', {}, h('tr', {}, ...t.fields.map((f) => h('th', {}, f)))),
      h('tbody', {}, ...t.rows.map((row) => h('tr', {}, ...row.map((v) => h('td', {}, v ?? 'NULL'))))),
    ),
    h('div', { class: 'timing' }, t.total > t.rows.length ? `the replica's first ${t.rows.length} of ${t.total} rows` : `the replica's ${t.total} row${t.total === 1 ? '' : 's'}`),
  )
}
