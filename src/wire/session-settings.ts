// One wire session's run-time parameters, although sessions share one backend.
//
// Settings (SET, set_config) live in PGlite's one backend, so one client's
// `SET search_path = ''` (pg_recvlogical and pg_dump send it) would change
// every other client's, and the worker's own queries. So a session keeps its
// own:
// - SET and RESET of catalog-checked settings outside a block are answered
//   here (set()), never reaching the backend;
// - a session that may have changed settings in the backend (a statement
//   that SETs, noted by noteSent()) saves them and RESETs the backend before
//   it lets go (save()), and puts them back when it next takes it (restore());
// - SET LOCAL values are kept for the transaction too: they bound its waits;
// - the timeouts that end a connection are the session's alone and never
//   stay in the backend (engine/backend/idle-timeouts.ts; guard()).

import type { PGlite } from '@electric-sql/pglite'
import { parameterStatus, commandComplete } from '../protocol/backend'
import { PgError, SqlState } from '../protocol/errors'
import { backendOf } from '../engine/backend/backend'
import { GucCatalog } from '../engine/backend/gucs'
import { isSessionOnly, mayTouchSessionTimeouts, resetSql, SESSION_ONLY_TIMEOUTS, SHOW_TIMEOUTS_SQL } from '../engine/backend/idle-timeouts'
import { ENGINE_SESSION_SQL } from '../engine/install'
import { literal, run } from '../engine/replication/exclusive'
import { mayChangeSettings } from './transaction-statements'

/** Settings whose changes PostgreSQL reports with ParameterStatus (of those a catalog-checked SET can change). */
const REPORTED = ['DateStyle', 'IntervalStyle', 'standard_conforming_strings', 'default_transaction_read_only', 'in_hot_standby']

export class SessionSettings {
  /** name, value (base unit) of each setting this session changed, in the order set. */
  private values: [string, string][] = []
  /** The backend may hold settings of this session (they must be saved and reset before it lets go). */
  private dirty = false
  /** SET LOCAL values of the transaction in progress. */
  private readonly locals = new Map<string, string>()
  /** A statement sent to the backend may have set a session-only timeout. */
  private guardDue = false

  constructor(private readonly db: PGlite) {}

  /** A message is going to the backend: might it change settings there? */
  noteSent(text: string): void {
    if (!this.dirty && mayChangeSettings(text)) this.dirty = true
    if (mayTouchSessionTimeouts(text)) this.guardDue = true
  }

  /** A SET LOCAL (value null: DEFAULT) in this transaction; throws PostgreSQL's error for a bad one. */
  setLocal(name: string, value: string | null): void {
    if (value === null) {
      if (!backendOf(this.db).gucs.get(name) && !name.includes('.')) {
        throw new PgError({ code: '42704', message: `unrecognized configuration parameter "${name}"` })
      }
      this.locals.delete(name)
    } else {
      const set = backendOf(this.db).gucs.assign(name, value)
      this.locals.set(set.name, set.value)
    }
  }

  /** The transaction ended: its SET LOCAL values go. */
  endTransaction(): void {
    this.locals.clear()
  }

  /**
   * A session-level SET or RESET answered from the session's own settings
   * (restored with set_config when it next uses the backend). `value` null:
   * DEFAULT / RESET. Returns the reply (without ReadyForQuery).
   */
  set(name: string, value: string | null, reset = value === null): Uint8Array[] {
    const { gucs } = backendOf(this.db)
    const tag = commandComplete(reset ? 'RESET' : 'SET')
    if (name === 'all') {
      this.values = []
      return [tag]
    }
    const def = gucs.get(name)
    if (!def && !name.includes('.')) throw new PgError({ code: '42704', message: `unrecognized configuration parameter "${name}"` })
    const canonical = def?.name ?? name
    const assigned = value === null ? null : gucs.assign(canonical, value)
    this.values = this.values.filter(([n]) => n !== canonical)
    if (assigned) this.values.push([assigned.name, assigned.value])
    // ParameterStatus for the settings PostgreSQL reports to the client (GUC_REPORT).
    const reported = REPORTED.find((r) => r.toLowerCase() === canonical)
    if (reported && def) return [tag, parameterStatus(reported, gucs.show(canonical, assigned?.value ?? def.boot))]
    return [tag]
  }

  /** A setting's value as this session has it (base unit): SET LOCAL, SET, then the server's. */
  private value(name: string): string | undefined {
    return this.locals.get(name) ?? this.values.find(([n]) => n === name)?.[1]
  }

  /** SHOW's form of a setting as this session has it. */
  show(name: string): string {
    const { gucs } = backendOf(this.db)
    const def = gucs.get(name)
    if (!def) throw new PgError({ code: SqlState.undefinedObject, message: `unrecognized configuration parameter "${name}"` })
    return gucs.show(def.name, this.value(def.name) ?? def.boot)
  }

  /** A memory setting in bytes as this session has it. */
  bytes(name: string): number {
    const def = backendOf(this.db).gucs.get(name)
    return GucCatalog.bytes(def, def && (this.value(def.name) ?? def.boot))
  }

  /** A time setting in ms as this session has it. */
  ms(name: string): number {
    return GucCatalog.millis(backendOf(this.db).gucs.get(name), this.value(name))
  }

  defaultIsolation(): string {
    const set = this.values.find(([n]) => n === 'default_transaction_isolation')?.[1]
    return set ?? backendOf(this.db).gucs.get('default_transaction_isolation')?.boot ?? 'read committed'
  }

  /** The session takes the backend: its settings go back in (the session-only timeouts never do). */
  async restore(): Promise<void> {
    const restored = this.values.filter(([n]) => !isSessionOnly(n))
    if (restored.length === 0) return
    const sql = restored.map(([n, v]) => `SELECT pg_catalog.set_config(${literal(n)}, ${literal(v)}, false);`).join('')
    await this.db.runExclusive(() => run(this.db, sql, false))
    this.dirty = true
  }

  /** The session lets the backend go: its settings are read back and the backend reset. */
  async save(): Promise<void> {
    if (!this.dirty) return
    await this.db.runExclusive(async () => {
      const rows = (await run(this.db, `SELECT name, setting FROM pg_catalog.pg_settings WHERE source = 'session'`, false)).sets[0]
      // The session-only timeouts are this session's, never the backend's (0 there).
      const own = this.values.filter(([n]) => isSessionOnly(n))
      this.values = [...rows.filter(([n]) => !isSessionOnly(n!)).map(([n, v]): [string, string] => [n!, v!]), ...own]
      await run(this.db, `RESET ALL; ${ENGINE_SESSION_SQL}`, false)
    })
    this.dirty = false
  }

  /** The session ended holding the backend: reset what it may have set (nothing to keep). */
  async resetBackend(): Promise<void> {
    if (this.dirty) await this.db.runExclusive(() => run(this.db, `RESET ALL; ${ENGINE_SESSION_SQL}`, false))
    this.dirty = false
  }

  /** A guard is due after a statement that named a session-only timeout (see guard()). */
  get guardPending(): boolean {
    return this.guardDue
  }

  /**
   * After such a statement, with the backend ready and not in an aborted
   * transaction: what it set moves from the backend into this session.
   * SHOW and SET take no snapshot, so a REPEATABLE READ transaction's stays
   * where the client's first query puts it.
   */
  async guard(): Promise<void> {
    this.guardDue = false
    const { gucs } = backendOf(this.db)
    await this.db.runExclusive(async () => {
      const { sets } = await run(this.db, SHOW_TIMEOUTS_SQL, false)
      const set = SESSION_ONLY_TIMEOUTS.map((name, i) => gucs.assign(name, sets[i][0][0]!)).filter((a) => GucCatalog.millis(gucs.get(a.name), a.value) !== 0)
      if (!set.length) return
      await run(this.db, resetSql(set.map((a) => a.name)), false)
      for (const a of set) {
        if (this.locals.has(a.name)) continue // a SET LOCAL, already noted
        this.values = this.values.filter(([n]) => n !== a.name)
        this.values.push([a.name, a.value])
      }
    })
  }

  /** In an aborted transaction nothing can be read: the caller rolls it back instead (the guard is done). */
  guardSkipped(): void {
    this.guardDue = false
  }
}
