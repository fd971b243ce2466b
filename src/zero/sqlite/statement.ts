// A prepared statement of the zero-sqlite3 API over sqlite3.wasm (see
// database.ts): binding by better-sqlite3's rules, rows as objects, arrays
// (raw), single values (pluck) or per table (expand), and scan status.

import type { Sqlite } from './binding'
import type { Database } from './database'

const SQLITE_ROW = 100
const SQLITE_DONE = 101
const SQLITE_INTEGER = 1
const SQLITE_FLOAT = 2
const SQLITE_TEXT = 3
const SQLITE_BLOB = 4
const SQLITE_PREPARE_PERSISTENT = 0x1
/** SQLite copies bound text and blobs before the call returns. */
const SQLITE_TRANSIENT = -1

/** sqlite3_stmt_scanstatus_v2's opcodes and flag, as the addon exports them. */
export const SCANSTAT = {
  SQLITE_SCANSTAT_NLOOP: 0,
  SQLITE_SCANSTAT_NVISIT: 1,
  SQLITE_SCANSTAT_EST: 2,
  SQLITE_SCANSTAT_NAME: 3,
  SQLITE_SCANSTAT_EXPLAIN: 4,
  SQLITE_SCANSTAT_SELECTID: 5,
  SQLITE_SCANSTAT_PARENTID: 6,
  SQLITE_SCANSTAT_NCYCLE: 7,
  SQLITE_SCANSTAT_COMPLEX: 1,
} as const

export interface RunResult {
  changes: number
  lastInsertRowid: number | bigint
}

export interface ColumnDefinition {
  name: string
  column: string | null
  table: string | null
  database: string | null
  type: string | null
}

export class Statement {
  readonly database: Database
  readonly source: string
  readonly reader: boolean
  readonly readonly: boolean
  #stmt: number
  #sqlite: Sqlite
  /** How rows come back: at most one of pluck, raw and expand is on at a time. */
  #shape: 'object' | 'pluck' | 'raw' | 'expand' = 'object'
  #safe: boolean
  #bound = false
  #busy = false
  #names: string[] = []
  #params: (string | null)[] = []

  constructor(db: Database, source: string) {
    if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string')
    if (!db.handle) throw new TypeError('The database connection is not open')
    this.database = db
    this.source = source
    this.#sqlite = db.sqlite
    this.#safe = db.safeIntegersByDefault
    const { c } = this.#sqlite
    const z = this.#sqlite.cString(source)
    try {
      const tailOut = this.#sqlite.out + 4
      const rc = c.sqlite3_prepare_v3(db.handle, z.ptr, z.length, SQLITE_PREPARE_PERSISTENT, this.#sqlite.out, tailOut)
      if (rc !== 0) throw db.error(rc)
      this.#stmt = this.#sqlite.view.getUint32(this.#sqlite.out, true)
      const tail = this.#sqlite.view.getUint32(tailOut, true)
      if (!this.#stmt) throw new RangeError('The supplied SQL string contains no statements')
      if (!onlyCommentsLeft(this.#sqlite.string(tail))) {
        c.sqlite3_finalize(this.#stmt)
        throw new RangeError('The supplied SQL string contains more than one statement')
      }
    } finally {
      c.free(z.ptr)
    }
    const columns = c.sqlite3_column_count(this.#stmt)
    this.reader = columns > 0
    this.readonly = c.sqlite3_stmt_readonly(this.#stmt) !== 0
    for (let i = 0; i < columns; i++) this.#names.push(this.#sqlite.string(c.sqlite3_column_name(this.#stmt, i)))
    const count = c.sqlite3_bind_parameter_count(this.#stmt)
    for (let i = 1; i <= count; i++) {
      const p = c.sqlite3_bind_parameter_name(this.#stmt, i)
      this.#params.push(p ? this.#sqlite.string(p) : null)
    }
    db.statements.add(this)
  }

  get busy(): boolean {
    return this.#busy
  }

  run(...params: unknown[]): RunResult {
    const { c } = this.#sqlite
    const db = this.database
    this.#start(params)
    try {
      let rc: number
      while ((rc = c.sqlite3_step(this.#stmt)) === SQLITE_ROW) {}
      if (rc !== SQLITE_DONE) throw db.error(rc)
      const changes = Number(c.sqlite3_changes64(db.handle))
      const rowid = c.sqlite3_last_insert_rowid(db.handle)
      return { changes, lastInsertRowid: this.#safe ? rowid : Number(rowid) }
    } finally {
      this.#finish()
    }
  }

  get(...params: unknown[]): unknown {
    this.#requireReader('get')
    this.#start(params)
    try {
      const rc = this.#sqlite.c.sqlite3_step(this.#stmt)
      if (rc === SQLITE_ROW) return this.#row()
      if (rc !== SQLITE_DONE) throw this.database.error(rc)
      return undefined
    } finally {
      this.#finish()
    }
  }

  all(...params: unknown[]): unknown[] {
    this.#requireReader('all')
    this.#start(params)
    try {
      const rows: unknown[] = []
      let rc: number
      while ((rc = this.#sqlite.c.sqlite3_step(this.#stmt)) === SQLITE_ROW) rows.push(this.#row())
      if (rc !== SQLITE_DONE) throw this.database.error(rc)
      return rows
    } finally {
      this.#finish()
    }
  }

  iterate(...params: unknown[]): IterableIterator<unknown> {
    this.#requireReader('iterate')
    this.#start(params)
    this.#busy = true
    let done = false
    const end = () => {
      if (done) return
      done = true
      this.#busy = false
      this.#finish()
    }
    const it: IterableIterator<unknown> = {
      next: () => {
        if (done) return { done: true, value: undefined }
        let rc: number
        try {
          rc = this.#sqlite.c.sqlite3_step(this.#stmt)
          if (rc === SQLITE_ROW) return { done: false, value: this.#row() }
          if (rc !== SQLITE_DONE) throw this.database.error(rc)
        } catch (e) {
          end()
          throw e
        }
        end()
        return { done: true, value: undefined }
      },
      return: () => {
        end()
        return { done: true, value: undefined }
      },
      [Symbol.iterator]: () => it,
    }
    return it
  }

  pluck(on = true): this {
    return this.#setShape('pluck', on)
  }

  raw(on = true): this {
    return this.#setShape('raw', on)
  }

  expand(on = true): this {
    return this.#setShape('expand', on)
  }

  #setShape(shape: 'pluck' | 'raw' | 'expand', on: boolean): this {
    this.#requireReader(shape)
    if (on) this.#shape = shape
    else if (this.#shape === shape) this.#shape = 'object'
    return this
  }

  safeIntegers(on = true): this {
    this.#safe = on
    return this
  }

  bind(...params: unknown[]): this {
    if (this.#bound) throw new TypeError('The bind() method can only be invoked once per statement object')
    this.#bindAll(params)
    this.#bound = true
    return this
  }

  columns(): ColumnDefinition[] {
    this.#requireReader('columns')
    const { c } = this.#sqlite
    const str = (p: number) => (p ? this.#sqlite.string(p) : null)
    return this.#names.map((name, i) => ({
      name,
      column: str(c.sqlite3_column_origin_name(this.#stmt, i)),
      table: str(c.sqlite3_column_table_name(this.#stmt, i)),
      database: str(c.sqlite3_column_database_name(this.#stmt, i)),
      type: str(c.sqlite3_column_decltype(this.#stmt, i)),
    }))
  }

  scanStatusV2(idx: number, opcode: number, flags: number): number | string | undefined {
    const { c, out, view } = this.#sqlite
    if (c.sqlite3_stmt_scanstatus_v2(this.#stmt, idx, opcode, flags, out) !== 0) return undefined
    switch (opcode) {
      case SCANSTAT.SQLITE_SCANSTAT_NAME:
      case SCANSTAT.SQLITE_SCANSTAT_EXPLAIN: {
        const p = view.getUint32(out, true)
        return p ? this.#sqlite.string(p) : undefined
      }
      case SCANSTAT.SQLITE_SCANSTAT_EST:
        return view.getFloat64(out, true)
      case SCANSTAT.SQLITE_SCANSTAT_SELECTID:
      case SCANSTAT.SQLITE_SCANSTAT_PARENTID:
        return view.getInt32(out, true)
      default:
        return Number(view.getBigInt64(out, true))
    }
  }

  scanStatusReset(): this {
    this.#sqlite.c.sqlite3_stmt_scanstatus_reset(this.#stmt)
    return this
  }

  /** @internal Frees the statement (the database closing, or a pragma done). */
  finalize(): void {
    if (!this.#stmt) return
    this.#sqlite.c.sqlite3_finalize(this.#stmt)
    this.#stmt = 0
    this.database.statements.delete(this)
  }

  #requireReader(method: string): void {
    if (!this.reader) throw new TypeError(`The ${method}() method is only for statements that return data`)
  }

  #start(params: unknown[]): void {
    if (!this.database.open) throw new TypeError('The database connection is not open')
    if (!this.#stmt) throw new TypeError('This statement has been finalized')
    if (this.#busy) throw new TypeError('This statement is busy executing a query')
    if (this.#bound) {
      if (params.length > 0) throw new TypeError('This statement already has bound parameters')
      return
    }
    this.#bindAll(params)
  }

  #finish(): void {
    if (!this.#stmt) return
    this.#sqlite.c.sqlite3_reset(this.#stmt)
    if (!this.#bound) this.#sqlite.c.sqlite3_clear_bindings(this.#stmt)
  }

  #bindAll(params: unknown[]): void {
    const positional: unknown[] = []
    let named: Record<string, unknown> | undefined
    for (const p of params) {
      if (Array.isArray(p)) positional.push(...p)
      else if (isPlainObject(p)) {
        if (named) throw new TypeError('You cannot specify named parameters in two different objects')
        named = p
      } else positional.push(p)
    }
    let next = 0
    for (let i = 0; i < this.#params.length; i++) {
      const name = this.#params[i]
      if (name === null || /^\?\d*$/.test(name)) {
        if (next >= positional.length) throw new RangeError('Too few parameter values were provided')
        this.#bindValue(i + 1, positional[next++])
      } else {
        const key = name.slice(1)
        if (!named) throw new TypeError('Missing named parameters')
        if (!(key in named)) throw new RangeError(`Missing named parameter "${key}"`)
        this.#bindValue(i + 1, named[key])
      }
    }
    if (next < positional.length) throw new RangeError('Too many parameter values were provided')
  }

  #bindValue(index: number, value: unknown): void {
    const { c } = this.#sqlite
    let rc: number
    if (typeof value === 'number') rc = c.sqlite3_bind_double(this.#stmt, index, value)
    else if (typeof value === 'bigint') {
      if (value > 0x7fffffffffffffffn || value < -0x8000000000000000n) throw new RangeError('The bound BigInt is too large to be represented as a 64-bit integer')
      rc = c.sqlite3_bind_int64(this.#stmt, index, value)
    } else if (typeof value === 'string') {
      const z = this.#sqlite.cString(value)
      rc = c.sqlite3_bind_text(this.#stmt, index, z.ptr, z.length, SQLITE_TRANSIENT)
      c.free(z.ptr)
    } else if (value instanceof Uint8Array) {
      const ptr = c.malloc(Math.max(1, value.length))
      this.#sqlite.u8.set(value, ptr)
      rc = c.sqlite3_bind_blob(this.#stmt, index, ptr, value.length, SQLITE_TRANSIENT)
      c.free(ptr)
    } else if (value === null || value === undefined) rc = c.sqlite3_bind_null(this.#stmt, index)
    else throw new TypeError('SQLite3 can only bind numbers, strings, bigints, buffers, and null')
    if (rc !== 0) throw this.database.error(rc)
  }

  #value(i: number): unknown {
    const { c } = this.#sqlite
    switch (c.sqlite3_column_type(this.#stmt, i)) {
      case SQLITE_INTEGER:
        return this.#safe ? c.sqlite3_column_int64(this.#stmt, i) : c.sqlite3_column_double(this.#stmt, i)
      case SQLITE_FLOAT:
        return c.sqlite3_column_double(this.#stmt, i)
      case SQLITE_TEXT: {
        const p = c.sqlite3_column_text(this.#stmt, i)
        return this.#sqlite.string(p, c.sqlite3_column_bytes(this.#stmt, i))
      }
      case SQLITE_BLOB: {
        const p = c.sqlite3_column_blob(this.#stmt, i)
        const n = c.sqlite3_column_bytes(this.#stmt, i)
        const bytes = this.#sqlite.u8.slice(p, p + n)
        // zero-cache runs on Node's Buffer API; a bundle for the tab provides one.
        const B = (globalThis as { Buffer?: { from(b: ArrayBuffer, o: number, n: number): Uint8Array } }).Buffer
        return B ? B.from(bytes.buffer, 0, n) : bytes
      }
      default:
        return null
    }
  }

  #row(): unknown {
    const n = this.#names.length
    if (this.#shape === 'pluck') return this.#value(0)
    if (this.#shape === 'raw') {
      const row = new Array(n)
      for (let i = 0; i < n; i++) row[i] = this.#value(i)
      return row
    }
    if (this.#shape === 'expand') {
      const row: Record<string, Record<string, unknown>> = {}
      const { c } = this.#sqlite
      for (let i = 0; i < n; i++) {
        const t = c.sqlite3_column_table_name(this.#stmt, i)
        const table = t ? this.#sqlite.string(t) : '$'
        ;(row[table] ??= {})[this.#names[i]] = this.#value(i)
      }
      return row
    }
    const row: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) row[this.#names[i]] = this.#value(i)
    return row
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return false
  const proto = Object.getPrototypeOf(v)
  return proto === Object.prototype || proto === null
}

/** True when what follows the first statement is only whitespace, semicolons and comments. */
function onlyCommentsLeft(tail: string): boolean {
  let i = 0
  while (i < tail.length) {
    const ch = tail[i]
    if (ch === ';' || ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r' || ch === '\f') i++
    else if (tail.startsWith('--', i)) {
      const nl = tail.indexOf('\n', i)
      i = nl < 0 ? tail.length : nl + 1
    } else if (tail.startsWith('/*', i)) {
      const end = tail.indexOf('*/', i + 2)
      i = end < 0 ? tail.length : end + 2
    } else return false
  }
  return true
}

