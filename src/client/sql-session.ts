// A psql-like session on the database's wire protocol (Database.connect()):
// simple queries, and for each statement what PostgreSQL says of it, its
// command tag ("INSERT 0 1", "UPDATE 2", "BEGIN") and its rows as text, so a
// console shows exactly what psql would. Statements before an error keep
// their results; the error is PostgreSQL's own (SQLSTATE, position, ...).

import { decodeBackendMessages, forEachMessage, type BackendMessage } from '../protocol/backend-decode'
import { concatBytes } from '../protocol/backend'
import { PgError } from '../protocol/errors'
import { query, startupMessage } from '../protocol/frontend'
import type { Database } from './database'

export interface StatementResult {
  /** The command tag, as psql prints it after a statement. */
  commandTag: string
  /** Column names when the statement returned rows (SELECT, RETURNING, SHOW); else empty. */
  fields: string[]
  rows: (string | null)[][]
}

export interface QueryOutcome {
  results: StatementResult[]
  /** The error that ended the query string (its earlier statements' results stand). */
  error?: PgError
  /** Transaction status after it: 'I' idle, 'T' in a transaction block, 'E' in a failed one. */
  status: string
}

export class SqlSession {
  private buffered = new Uint8Array(0)
  private messages: BackendMessage[] = []
  private wake: (() => void) | null = null
  private closed = false

  private constructor(private readonly port: MessagePort) {
    port.onmessage = (ev: MessageEvent<ArrayBuffer | null>) => {
      if (ev.data === null) this.closed = true
      else this.receive(new Uint8Array(ev.data))
      const w = this.wake
      this.wake = null
      w?.()
    }
  }

  static async open(db: Database, applicationName = 'tabgres console'): Promise<SqlSession> {
    const s = new SqlSession(await db.connect())
    s.send(startupMessage({ user: 'postgres', database: 'postgres', application_name: applicationName }))
    const { error } = await s.untilReady()
    if (error) {
      s.close()
      throw error
    }
    return s
  }

  /** Runs a query string (one or more statements) as psql does with a simple query. */
  async query(sql: string): Promise<QueryOutcome> {
    if (this.closed) throw new PgError({ code: '08003', message: 'the connection is closed' })
    this.send(query(sql))
    return this.untilReady()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.send(new Uint8Array([0x58, 0, 0, 0, 4])) // Terminate
    this.port.close()
  }

  private send(bytes: Uint8Array): void {
    const buffer = bytes.slice().buffer
    this.port.postMessage(buffer, [buffer])
  }

  /** Appends bytes of the backend's stream and decodes its whole messages. */
  private receive(bytes: Uint8Array): void {
    const all = concatBytes([this.buffered, bytes])
    const end = forEachMessage(all, () => {})
    this.messages.push(...decodeBackendMessages(all.subarray(0, end)))
    this.buffered = all.slice(end)
  }

  /** The messages up to ReadyForQuery, as statement results and the error, if any. */
  private async untilReady(): Promise<QueryOutcome> {
    const results: StatementResult[] = []
    let current: StatementResult | null = null
    let error: PgError | undefined
    for (;;) {
      const m = this.messages.shift()
      if (!m) {
        if (this.closed) throw error ?? new PgError({ code: '08006', message: 'the connection ended' })
        await new Promise<void>((r) => (this.wake = r))
        continue
      }
      if (m.tag === 'T') current = { commandTag: '', fields: m.fields.map((f) => f.name), rows: [] }
      else if (m.tag === 'D') current?.rows.push(m.values)
      else if (m.tag === 'C') {
        results.push({ ...(current ?? { fields: [], rows: [] }), commandTag: m.commandTag })
        current = null
      } else if (m.tag === 'E') error = new PgError(m.fields)
      else if (m.tag === 'Z') return { results, error, status: m.status }
    }
  }
}
