// The API of @rocicorp/zero-sqlite3 (better-sqlite3's, plus scanStatusV2)
// over sqlite3.wasm, so that zero-cache's code runs unchanged in a tab: the
// bundle resolves '@rocicorp/zero-sqlite3' to this module. Behaviour follows
// the native addon where zero-cache can see it: numbers bind as REAL and
// integers read back as numbers unless safeIntegers is on; errors are
// SqliteError with the extended result code's name; one statement per
// prepare; named parameters from a plain object.

import type { Sqlite } from './binding'
import { RESULT_CODES } from './result-codes.generated'
import { SCANSTAT, Statement } from './statement'

export type { ColumnDefinition, RunResult, Statement } from './statement'

const SQLITE_OPEN_READONLY = 0x1
const SQLITE_OPEN_READWRITE = 0x2
const SQLITE_OPEN_CREATE = 0x4
const SQLITE_OPEN_URI = 0x40
const SQLITE_OPEN_MEMORY = 0x80

let current: Sqlite | undefined

/** The instance every `new Database()` opens its connection in (one per worker: see binding.ts). */
export function useSqlite(sqlite: Sqlite): void {
  current = sqlite
}

export class SqliteError extends Error {
  readonly code: string
  constructor(message: string, code: string) {
    super(message)
    this.code = code
  }
}
Object.defineProperty(SqliteError.prototype, 'name', { value: 'SqliteError', writable: true, configurable: true })

function codeName(rc: number): string {
  return RESULT_CODES.get(rc) ?? RESULT_CODES.get(rc & 0xff) ?? `SQLITE_UNKNOWN_${rc}`
}

export interface Options {
  readonly?: boolean
  fileMustExist?: boolean
  timeout?: number
}

type Transaction<F extends (...args: never[]) => unknown> = F & { deferred: F; immediate: F; exclusive: F; default: F; database: Database }

export default class Database {
  static readonly SQLITE_SCANSTAT_NLOOP = SCANSTAT.SQLITE_SCANSTAT_NLOOP
  static readonly SQLITE_SCANSTAT_NVISIT = SCANSTAT.SQLITE_SCANSTAT_NVISIT
  static readonly SQLITE_SCANSTAT_EST = SCANSTAT.SQLITE_SCANSTAT_EST
  static readonly SQLITE_SCANSTAT_NAME = SCANSTAT.SQLITE_SCANSTAT_NAME
  static readonly SQLITE_SCANSTAT_EXPLAIN = SCANSTAT.SQLITE_SCANSTAT_EXPLAIN
  static readonly SQLITE_SCANSTAT_SELECTID = SCANSTAT.SQLITE_SCANSTAT_SELECTID
  static readonly SQLITE_SCANSTAT_PARENTID = SCANSTAT.SQLITE_SCANSTAT_PARENTID
  static readonly SQLITE_SCANSTAT_NCYCLE = SCANSTAT.SQLITE_SCANSTAT_NCYCLE
  static readonly SQLITE_SCANSTAT_COMPLEX = SCANSTAT.SQLITE_SCANSTAT_COMPLEX

  readonly name: string
  readonly memory: boolean
  /** @internal */ readonly sqlite: Sqlite
  /** @internal */ handle: number
  /** @internal */ readonly statements = new Set<Statement>()
  /** @internal */ safeIntegersByDefault = false
  #unsafe = false

  constructor(filename?: string | null, options: Options = {}) {
    const sqlite = current
    if (!sqlite) throw new Error('zero-sqlite3 in the tab: no SQLite instance (call useSqlite first)')
    if (filename != null && typeof filename !== 'string') throw new TypeError('Expected first argument to be a string')
    if (typeof options !== 'object' || options === null) throw new TypeError('Expected second argument to be an options object')
    if ('readOnly' in options) throw new TypeError('Misspelled option "readOnly" should be "readonly"')
    const name = (filename ?? '').trim()
    const anonymous = name === '' || name === ':memory:'
    const timeout = options.timeout ?? 5000
    if (options.readonly && anonymous) throw new TypeError('In-memory/temporary databases cannot be readonly')
    if (!Number.isInteger(timeout) || timeout < 0) throw new TypeError('Expected the "timeout" option to be a positive integer')
    this.sqlite = sqlite
    this.name = name
    this.memory = anonymous
    let flags = options.readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | (options.fileMustExist ? 0 : SQLITE_OPEN_CREATE)
    if (name.startsWith('file:')) flags |= SQLITE_OPEN_URI
    if (anonymous) flags |= SQLITE_OPEN_MEMORY
    const z = sqlite.cString(anonymous ? ':memory:' : name)
    try {
      const rc = sqlite.c.sqlite3_open_v2(z.ptr, sqlite.out, flags, 0)
      this.handle = sqlite.view.getUint32(sqlite.out, true)
      if (rc !== 0) {
        const message = this.handle ? sqlite.string(sqlite.c.sqlite3_errmsg(this.handle)) : sqlite.string(sqlite.c.sqlite3_errstr(rc))
        if (this.handle) sqlite.c.sqlite3_close_v2(this.handle)
        this.handle = 0
        throw new SqliteError(message, codeName(rc))
      }
    } finally {
      sqlite.c.free(z.ptr)
    }
    sqlite.c.sqlite3_extended_result_codes(this.handle, 1)
    sqlite.c.sqlite3_busy_timeout(this.handle, timeout)
  }

  get open(): boolean {
    return this.handle !== 0
  }

  get inTransaction(): boolean {
    return this.handle !== 0 && this.sqlite.c.sqlite3_get_autocommit(this.handle) === 0
  }

  get readonly(): boolean {
    return this.handle !== 0 && this.sqlite.c.sqlite3_db_readonly(this.handle, 0) === 1
  }

  prepare(source: string): Statement {
    return new Statement(this, source)
  }

  exec(source: string): this {
    if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string')
    this.#requireOpen()
    const z = this.sqlite.cString(source)
    try {
      const rc = this.sqlite.c.sqlite3_exec(this.handle, z.ptr, 0, 0, 0)
      if (rc !== 0) throw this.error(rc)
    } finally {
      this.sqlite.c.free(z.ptr)
    }
    return this
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string')
    const stmt = this.prepare(`PRAGMA ${source}`)
    try {
      // A pragma that sets something returns no rows: [] (or undefined when simple), as natively.
      if (!stmt.reader) return stmt.run(), options.simple ? undefined : []
      return options.simple ? stmt.pluck().get() : stmt.all()
    } finally {
      stmt.finalize()
    }
  }

  transaction<F extends (...args: never[]) => unknown>(fn: F): Transaction<F> {
    if (typeof fn !== 'function') throw new TypeError('Expected first argument to be a function')
    const variant = (begin: string): F => {
      const db = this
      return function sqliteTransaction(this: unknown, ...args: Parameters<F>) {
        const nested = db.inTransaction
        db.exec(nested ? 'SAVEPOINT "\t_bs3.\t"' : begin)
        try {
          const result = fn.apply(this, args)
          if (result && typeof (result as PromiseLike<unknown>).then === 'function') throw new TypeError('Transaction function cannot return a promise')
          db.exec(nested ? 'RELEASE "\t_bs3.\t"' : 'COMMIT')
          return result
        } catch (e) {
          if (db.inTransaction) {
            if (nested) db.exec('ROLLBACK TO "\t_bs3.\t"; RELEASE "\t_bs3.\t"')
            else db.exec('ROLLBACK')
          }
          throw e
        }
      } as F
    }
    const variants = {
      default: variant('BEGIN'),
      deferred: variant('BEGIN DEFERRED'),
      immediate: variant('BEGIN IMMEDIATE'),
      exclusive: variant('BEGIN EXCLUSIVE'),
    }
    for (const f of Object.values(variants)) Object.assign(f, variants, { database: this })
    return variants.default as Transaction<F>
  }

  unsafeMode(unsafe = true): this {
    this.#unsafe = unsafe
    return this
  }

  get unsafe(): boolean {
    return this.#unsafe
  }

  defaultSafeIntegers(on = true): this {
    this.safeIntegersByDefault = on
    return this
  }

  loadExtension(): never {
    throw new SqliteError('extensions cannot be loaded into SQLite in a tab', 'SQLITE_ERROR')
  }

  close(): this {
    if (!this.handle) return this
    for (const s of this.statements) s.finalize()
    const rc = this.sqlite.c.sqlite3_close_v2(this.handle)
    if (rc !== 0) throw this.error(rc)
    this.handle = 0
    return this
  }

  /** @internal */ error(rc: number): SqliteError {
    const code = this.handle ? this.sqlite.c.sqlite3_extended_errcode(this.handle) : rc
    const message = this.handle ? this.sqlite.string(this.sqlite.c.sqlite3_errmsg(this.handle)) : this.sqlite.string(this.sqlite.c.sqlite3_errstr(rc))
    return new SqliteError(message, codeName(code || rc))
  }

  #requireOpen(): void {
    if (!this.handle) throw new TypeError('The database connection is not open')
  }
}

export { Database }
