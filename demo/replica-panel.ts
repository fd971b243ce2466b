// The replica's panel: per published table, the primary's and the replica's
// row count and checksum side by side, equal once the replica caught up.

import { PgError, type Database } from '../src/client'
import { checksums, type TableChecksum, type TableRef } from './checksum'
import { h } from './dom'

export interface ReplicaView {
  checksums(tables: TableRef[]): Promise<TableChecksum[]>
}

const short = (c: TableChecksum) => (c.rows === null ? 'missing' : `${c.rows} row${c.rows === 1 ? '' : 's'} · ${c.md5!.slice(0, 8)}`)

export class ReplicaPanel {
  private pending: Promise<void> | null = null
  private again = false

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
    this.table.replaceChildren(
      h('thead', {}, h('tr', {}, h('th', {}, 'table'), h('th', {}, 'primary (IndexedDB)'), h('th', {}, 'replica (memory)'), h('th', {}, ''))),
      h(
        'tbody',
        {},
        ...left.map((p, i) => {
          const r = right[i]
          const equal = p.rows === r.rows && p.md5 === r.md5
          return h(
            'tr',
            { 'data-testid': 'checksum-row', 'data-table': `${p.schema}.${p.name}`, 'data-equal': String(equal), class: equal ? 'equal' : 'differs' },
            h('td', {}, `${p.schema}.${p.name}`),
            h('td', { class: 'mono', 'data-testid': 'checksum-primary' }, short(p)),
            h('td', { class: 'mono', 'data-testid': 'checksum-replica' }, short(r)),
            h('td', { class: 'state' }, equal ? '✓ equal' : '… catching up'),
          )
        }),
      ),
    )
  }
}
