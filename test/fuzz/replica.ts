// Differential replica fuzz: a seeded random workload runs on a primary
// (PGlite with change tracking and a publication FOR ALL TABLES); the engine's
// walsender streams it as pgoutput into a second PGlite through the replica
// applier; at checkpoints and at the end the replica must equal the primary,
// table by table. The same seed gives the same statements (the generator
// never asks the database for randomness: rows are picked by OFFSET into a
// deterministic order), so a failure replays with `npm run fuzz:replica --
// --seed S --ops N`.

import { PGlite } from '@electric-sql/pglite'
import { pruneNow } from '../../src/engine/replication/prune'
import { compareDatabases, streamInto, type StreamedReplica, type TableDiff } from '../support/replica'

/** mulberry32: small, fast, and the same sequence everywhere for one seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), a | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

class Rand {
  constructor(readonly next: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]
  }
}

// ---------------------------------------------------------------- values

const lit = (s: string): string => `'${s.replace(/'/g, "''")}'`

const PIECES = ["'", "''", '"', '\\', '\\\\x', ',', '{', '}', '(', ')', ';', '--', '\n', '\r\n', '\t', ' ', 'NULL', 'é', 'ß', '✓', '日本', '😀', 'Ω', '\u200b', 'a', 'b', 'xyz', '0']

function text(r: Rand): string {
  // Now and then a value above the TOAST threshold that does not compress, so
  // an update that leaves it alone streams as 'u' (unchanged TOAST).
  if (r.chance(0.02)) {
    let s = ''
    while (s.length < 2600) s += r.next().toString(36).slice(2)
    return s
  }
  const n = r.int(0, 6)
  let s = ''
  for (let i = 0; i < n; i++) s += r.pick(PIECES)
  return s
}

function jsonValue(r: Rand, depth = 0): unknown {
  const k = r.int(0, depth > 1 ? 3 : 5)
  if (k === 0) return r.int(-1000, 1000)
  if (k === 1) return cut(text(r), 20)
  if (k === 2) return r.chance(0.5)
  if (k === 3) return null
  if (k === 4) return Array.from({ length: r.int(0, 3) }, () => jsonValue(r, depth + 1))
  return Object.fromEntries(Array.from({ length: r.int(0, 3) }, () => [cut(text(r), 8), jsonValue(r, depth + 1)]))
}

/** The first n code points (slicing UTF-16 could split a surrogate pair). */
const cut = (s: string, n: number): string => [...s].slice(0, n).join('')

const hex = (r: Rand, bytes: number): string => Array.from({ length: bytes }, () => r.int(0, 255).toString(16).padStart(2, '0')).join('')

const arrayText = (xs: (string | null)[]): string =>
  `{${xs.map((x) => (x === null ? 'NULL' : `"${x.replace(/[\\"]/g, (c) => `\\${c}`)}"`)).join(',')}}`

/** Column types of the workload, each with a generator of SQL literals. */
export const TYPES: Record<string, (r: Rand) => string> = {
  int: (r) => String(r.pick([0, 1, -1, 2147483647, -2147483648, r.int(-100000, 100000)])),
  bigint: (r) => r.pick(['9007199254740993', '-9223372036854775808', '9223372036854775807', String(r.int(-1e9, 1e9))]),
  text: (r) => lit(text(r)),
  numeric: (r) => lit(r.pick(['NaN', '0', '-0.000', '1.0', '1.00', '123456789012345678901234567890.123456789', `${r.int(-99999, 99999)}.${r.int(0, 999)}`])) + '::numeric',
  'numeric(12,3)': (r) => lit(`${r.int(-999999, 999999)}.${r.int(0, 999)}`),
  bool: (r) => r.pick(['true', 'false']),
  timestamptz: (r) => lit(r.chance(0.05) ? r.pick(['infinity', '-infinity']) : new Date(r.int(-2e12, 4e12)).toISOString()) + '::timestamptz',
  date: (r) => lit(new Date(r.int(-2e12, 4e12)).toISOString().slice(0, 10)) + '::date',
  interval: (r) => lit(`${r.int(-40, 40)} days ${r.int(0, 23)}:${r.int(10, 59)}:${r.int(10, 59)}.${r.int(0, 999999)}`) + '::interval',
  jsonb: (r) => lit(JSON.stringify(jsonValue(r))) + '::jsonb',
  json: (r) => lit(JSON.stringify(jsonValue(r), null, r.chance(0.5) ? 1 : 0)) + '::json',
  bytea: (r) => lit(`\\x${hex(r, r.int(0, 12))}`) + '::bytea',
  'int[]': (r) => lit(arrayText(Array.from({ length: r.int(0, 4) }, () => (r.chance(0.2) ? null : String(r.int(-50, 50)))))) + '::int[]',
  'text[]': (r) => lit(arrayText(Array.from({ length: r.int(0, 3) }, () => (r.chance(0.2) ? null : cut(text(r), 12))))) + '::text[]',
  uuid: (r) => lit(`${hex(r, 4)}-${hex(r, 2)}-4${hex(r, 2).slice(1)}-a${hex(r, 2).slice(1)}-${hex(r, 6)}`) + '::uuid',
  float8: (r) => lit(r.pick(['NaN', 'Infinity', '-Infinity', '-0', '0', '1e-300', '0.1', String(r.next() * 1e6)])) + '::float8',
  'varchar(20)': (r) => lit(cut(text(r), 20)),
  // A tiny domain: rows of a table without a key often come out identical.
  smallint: (r) => String(r.int(0, 2)),
  // Non-built-in types (a Type message each): the replica keeps them as text.
  mood: (r) => lit(r.pick(['sad', 'ok', 'happy "quoted"'])),
  posint: (r) => String(r.int(0, 1000)),
  // A composite: its text output nests quoted fields inside the captured row.
  pair: (r) => `ROW(${r.chance(0.2) ? 'NULL' : lit(cut(text(r), 12))}, ${r.int(-5, 5)})::pair`,
  'pair[]': (r) => `ARRAY[${Array.from({ length: r.int(1, 3) }, () => `ROW(${lit(cut(text(r), 6))}, ${r.int(0, 9)})`).join(', ')}]::pair[]`,
  int4range: (r) => lit(r.pick(['empty', `[${r.int(-9, 0)},${r.int(1, 9)})`, `(,${r.int(0, 9)}]`])) + '::int4range',
  inet: (r) => lit(r.pick(['10.0.0.1', '192.168.0.0/16', '::1', '2001:db8::/32'])) + '::inet',
  point: (r) => lit(`(${r.int(-9, 9)},${r.next().toFixed(3)})`) + '::point',
  tsvector: (r) => `to_tsvector('simple', ${lit(cut(text(r), 15) + ' word')})`,
  'varbit(8)': (r) => `B'${r.int(0, 255).toString(2)}'`,
  'char(3)': (r) => lit(cut(text(r), 3)),
  timetz: (r) => lit(`${r.int(0, 23)}:${r.int(10, 59)}:${r.int(10, 59)}${r.pick(['+00', '-05:30', '+14'])}`) + '::timetz',
  real: (r) => lit(r.pick(['1.5', '-0', 'NaN', '3.4028235e38', String(r.next())])) + '::real',
  'int[][]': (r) => lit(r.pick(['{{1,2},{3,4}}', '{{NULL,1}}', '{}', '[0:1]={7,8}'])) + '::int[]',
}
/** Generators for a column of a declared type that want a narrower set of values. */
const NARROW: Record<string, (r: Rand) => string> = {
  zero: (r) => r.pick(["'0'::float8", "'-0'::float8"]),
}
const TYPE_NAMES = Object.keys(TYPES)

function value(r: Rand, c: Column): string {
  return r.chance(0.12) ? 'NULL' : (c.gen ? NARROW[c.gen] : TYPES[c.type])(r)
}

// ---------------------------------------------------------------- schema model

interface Column {
  name: string
  type: string
  /** A NARROW generator instead of the type's. */
  gen?: string
}

interface Table {
  /** Qualified, quoted. */
  sql: string
  /** The integer key column (always "id"), or null for a table without a primary key. */
  key: string | null
  /** A second key column (composite primary key), text. */
  key2: string | null
  columns: Column[]
  full: boolean
}

const q = (s: string): string => `"${s.replace(/"/g, '""')}"`

// The engine once choked on some of these (a$b$ closed a dollar quote).
const HOSTILE_NAMES = ['a"b', 'x; DROP TABLE t; --', 'Ünïcödé ✓', 'space d', "it's", 'back\\slash', 'select', '日本', 'd$b$x', '%s %I %L', '$$']

function initialTables(): Table[] {
  const kv = ['t text', 'n numeric', 'b bool', 'ts timestamptz', 'j jsonb', 'raw bytea', 'arr int[]', 'tags text[]', 'u uuid', 'big bigint', 'f float8', 'p pair', 'r int4range', 'ip inet']
  return [
    {
      sql: 'public.kv',
      key: 'id',
      key2: null,
      columns: kv.map((d) => ({ name: d.split(' ')[0], type: d.split(' ')[1] })),
      full: false,
    },
    {
      sql: `${q('Odd "Schema" ✓')}.${q('t; DROP TABLE kv; --')}`,
      key: 'id',
      key2: 'k "2"',
      columns: [
        { name: 'v "quoted"', type: 'text' },
        { name: 'Ünïcode', type: 'varchar(20)' },
        { name: 'd', type: 'date' },
      ],
      full: false,
    },
    {
      sql: 'public.full_nokey',
      key: null,
      key2: null,
      columns: [
        { name: 'a', type: 'int' },
        { name: 's', type: 'text' },
        { name: 'j', type: 'json' },
        { name: 'n', type: 'numeric' },
        { name: 'pt', type: 'point' },
        { name: 'pa', type: 'pair[]' },
      ],
      full: true,
    },
    {
      sql: 'public.full_pk',
      key: 'id',
      key2: null,
      columns: [
        { name: 'iv', type: 'interval' },
        { name: 'x', type: 'numeric(12,3)' },
        { name: 'doc', type: 'text' },
        { name: 'tv', type: 'tsvector' },
        { name: 'bits', type: 'varbit(8)' },
        { name: 'ch', type: 'char(3)' },
        { name: 'tz', type: 'timetz' },
        { name: 're', type: 'real' },
        { name: 'm', type: 'int[][]' },
      ],
      full: true,
    },
    {
      // Identical rows under REPLICA IDENTITY FULL: an update or delete of one
      // must change exactly one of them on the replica too (-0 and 0 are
      // equal floats that print apart).
      sql: 'public.dups',
      key: null,
      key2: null,
      columns: [
        { name: 'a', type: 'smallint' },
        { name: 'b', type: 'bool' },
        { name: 'z', type: 'float8', gen: 'zero' },
      ],
      full: true,
    },
    {
      sql: 'public.append_only',
      key: null,
      key2: null,
      columns: [
        { name: 'at', type: 'timestamptz' },
        { name: 'msg', type: 'text' },
        { name: 'mood', type: 'mood' },
        { name: 'n', type: 'posint' },
      ],
      full: false,
    },
  ]
}

function createSql(t: Table): string {
  const defs: string[] = []
  if (t.key) defs.push(`${q(t.key)} int NOT NULL`)
  if (t.key2) defs.push(`${q(t.key2)} text NOT NULL`)
  for (const c of t.columns) defs.push(`${q(c.name)} ${c.type}`)
  const keys = [t.key, t.key2].filter((k): k is string => k !== null)
  if (keys.length) defs.push(`PRIMARY KEY (${keys.map(q).join(', ')})`)
  let sql = `CREATE TABLE ${t.sql} (${defs.join(', ')});`
  if (t.full) sql += ` ALTER TABLE ${t.sql} REPLICA IDENTITY FULL;`
  return sql
}

// ---------------------------------------------------------------- workload

/** One transaction of the workload: its statements and whether it commits. */
export interface Step {
  statements: string[]
  commit: boolean
}

export class Workload {
  readonly r: Rand
  readonly tables: Table[] = initialTables()
  private nextId = 1
  private nextName = 1
  private transactions = 0
  private bulked = false

  constructor(seed: number) {
    this.r = new Rand(prng(seed))
  }

  /** The schema the run starts from. */
  setupSql(): string {
    return (
      `CREATE SCHEMA ${q('Odd "Schema" ✓')}; CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy "quoted"'); ` +
      `CREATE DOMAIN posint AS int CHECK (VALUE >= 0); CREATE TYPE pair AS (s text, n int); ` +
      this.tables.map(createSql).join(' ')
    )
  }

  /** A row picked by position in a deterministic order (primary key, or ctid for a table without one). */
  private pickRow(t: Table): string {
    const order = t.key ? q(t.key) + (t.key2 ? `, ${q(t.key2)}` : '') : 'ctid'
    const k = this.r.int(0, 1_000_000)
    return `(SELECT ctid FROM ${t.sql} ORDER BY ${order} OFFSET ${k} % GREATEST((SELECT count(*) FROM ${t.sql}), 1) LIMIT 1)`
  }

  private insert(t: Table): string {
    const rows = Array.from({ length: this.r.chance(0.3) ? this.r.int(2, 4) : 1 }, () => {
      const v: string[] = []
      if (t.key) v.push(String(this.nextId++))
      if (t.key2) v.push(lit(cut(text(this.r), 10) + this.nextId))
      for (const c of t.columns) v.push(value(this.r, c))
      return `(${v.join(', ')})`
    })
    const cols = [t.key, t.key2, ...t.columns.map((c) => c.name)].filter((c): c is string => c !== null)
    return `INSERT INTO ${t.sql} (${cols.map(q).join(', ')}) VALUES ${rows.join(', ')}`
  }

  private update(t: Table): string | null {
    const r = this.r
    const sets: string[] = []
    for (const c of t.columns) if (r.chance(0.4)) sets.push(`${q(c.name)} = ${value(r, c)}`)
    if (t.key && r.chance(0.15)) sets.push(`${q(t.key)} = ${this.nextId++}`)
    if (!sets.length) {
      if (!t.columns.length) return null
      const c = r.pick(t.columns)
      // Sometimes a no-op: PostgreSQL still streams it.
      sets.push(r.chance(0.5) ? `${q(c.name)} = ${q(c.name)}` : `${q(c.name)} = ${value(r, c)}`)
    }
    if (r.chance(0.2) && t.key) {
      // Several rows at once (a bounded number, so the run's size stays linear);
      // -id never collides (fresh ids are positive and never reused).
      const key = q(t.key)
      const some = (cond: string) => `${key} IN (SELECT ${key} FROM ${t.sql} WHERE ${cond} ORDER BY ${key} LIMIT ${r.int(2, 40)})`
      if (r.chance(0.3)) return `UPDATE ${t.sql} SET ${key} = -${key} WHERE ${some(`${key} > 0 AND ${key} % 7 = ${r.int(0, 6)}`)}`
      const nonKey = sets.filter((s) => !s.startsWith(key + ' ')).join(', ') || `${key} = ${key}`
      return `UPDATE ${t.sql} SET ${nonKey} WHERE ${some(`${key} % 5 = ${r.int(0, 4)}`)}`
    }
    if (r.chance(0.2) && !t.key && t.columns.some((c) => c.name === 'a' && (c.type === 'int' || c.type === 'smallint'))) {
      // Identical rows under REPLICA IDENTITY FULL: each is matched by value.
      return `UPDATE ${t.sql} SET ${sets.join(', ')} WHERE a IS NOT DISTINCT FROM ${value(r, t.columns.find((c) => c.name === 'a')!)}`
    }
    return `UPDATE ${t.sql} SET ${sets.join(', ')} WHERE ctid = ${this.pickRow(t)}`
  }

  private delete(t: Table): string {
    if (this.r.chance(0.15) && t.key) return `DELETE FROM ${t.sql} WHERE ${q(t.key)} % 9 = ${this.r.int(0, 8)}`
    const a = t.key ? undefined : t.columns.find((c) => c.name === 'a')
    if (a && this.r.chance(0.2)) return `DELETE FROM ${t.sql} WHERE a IS NOT DISTINCT FROM ${value(this.r, a)}`
    return `DELETE FROM ${t.sql} WHERE ctid = ${this.pickRow(t)}`
  }

  /** A row statement on a random table (updates and deletes only where the table has a replica identity). */
  private dml(): string {
    const r = this.r
    // Once in every run that reaches 1,000 transactions, then now and then.
    if ((!this.bulked && this.transactions >= 1000) || r.chance(0.00015)) {
      this.bulked = true
      // One transaction larger than the walsender's batch (2,000 changes): it
      // streams across several reads of the change log.
      const from = this.nextId
      this.nextId += 2001
      return `INSERT INTO ${this.tables[0].sql} (id) SELECT g FROM generate_series(${from}, ${this.nextId - 1}) g`
    }
    for (;;) {
      const t = r.pick(this.tables)
      const identity = t.full || t.key !== null
      const k = r.next()
      if (k < 0.45 || !identity) {
        if (!identity && r.chance(0.03)) return `TRUNCATE ${t.sql}`
        return this.insert(t)
      }
      if (k < 0.8) {
        const s = this.update(t)
        if (s) return s
        continue
      }
      if (k < 0.995) return this.delete(t)
      return r.chance(0.5) ? `TRUNCATE ${t.sql}` : `TRUNCATE ${t.sql}, ${r.pick(this.tables).sql}`
    }
  }

  /**
   * A schema change. `commits`: its transaction will commit, so the model
   * changes now and later statements of the transaction see the new shape.
   */
  private ddl(commits: boolean): string {
    const r = this.r
    const apply: (() => void)[] = []
    const sql = this.ddlSql(apply)
    if (commits) for (const f of apply) f()
    return sql
  }

  private ddlSql(apply: (() => void)[]): string {
    const r = this.r
    const t = r.pick(this.tables)
    const k = r.next()
    if (k < 0.35) {
      const name = r.chance(0.3) ? `${r.pick(HOSTILE_NAMES)} c${this.nextName++}` : `c${this.nextName++}`
      const type = r.pick(TYPE_NAMES)
      apply.push(() => t.columns.push({ name, type }))
      // No default: PostgreSQL would fill existing rows without streaming them.
      return `ALTER TABLE ${t.sql} ADD COLUMN ${q(name)} ${type}`
    }
    if (k < 0.6 && t.columns.length > 1) {
      const c = r.pick(t.columns)
      apply.push(() => t.columns.splice(t.columns.indexOf(c), 1))
      return `ALTER TABLE ${t.sql} DROP COLUMN ${q(c.name)}`
    }
    if (k < 0.7 && t.columns.length) {
      const c = r.pick(t.columns)
      apply.push(() => ((c.type = 'text'), (c.gen = undefined)))
      return `ALTER TABLE ${t.sql} ALTER COLUMN ${q(c.name)} TYPE text`
    }
    if (k < 0.75 && t.sql.startsWith('public.')) {
      // Renamed (or moved to the other schema), then written: the next Relation carries the new name.
      const n = this.nextName++
      const renamed = r.chance(0.5) ? `public.${q(`renamed ${n} ✓`)}` : `${q('Odd "Schema" ✓')}.${q(`moved ${n}`)}`
      const alter = renamed.startsWith('public.')
        ? `ALTER TABLE ${t.sql} RENAME TO ${renamed.slice('public.'.length)}`
        : `ALTER TABLE ${t.sql} RENAME TO ${q(`moved ${n}`)}; ALTER TABLE public.${q(`moved ${n}`)} SET SCHEMA ${q('Odd "Schema" ✓')}`
      apply.push(() => (t.sql = renamed))
      const before = t.sql
      t.sql = renamed
      const insert = this.insert(t)
      t.sql = before
      return `${alter}; ${insert}`
    }
    if (k < 0.85 && t.key) {
      const full = !t.full
      apply.push(() => (t.full = full))
      return `ALTER TABLE ${t.sql} REPLICA IDENTITY ${full ? 'FULL' : 'DEFAULT'}`
    }
    const n = this.nextName++
    const fresh: Table = {
      sql: r.chance(0.3) ? `${q('Odd "Schema" ✓')}.${q(`new ${n} "✓"`)}` : `public.${q(`t_new_${n}`)}`,
      key: r.chance(0.7) ? 'id' : null,
      key2: null,
      columns: Array.from({ length: r.int(1, 4) }, (_, i) => ({ name: `f${i}`, type: r.pick(TYPE_NAMES) })),
      full: false,
    }
    fresh.full = fresh.key === null ? r.chance(0.7) : r.chance(0.3)
    apply.push(() => this.tables.push(fresh))
    return createSql(fresh)
  }

  /**
   * The next transaction: one or more statements, maybe a rolled-back
   * savepoint, maybe a schema change between row changes, maybe a ROLLBACK.
   * Statements are generated in execution order, each against the shape the
   * ones before it left.
   */
  next(): Step {
    const r = this.r
    this.transactions++
    if (r.chance(0.012)) return { statements: [this.ddl(true)], commit: true }
    const n = r.chance(0.35) ? r.int(2, 6) : 1
    const commit = n === 1 || !r.chance(0.08)
    const savepointAt = n > 1 && r.chance(0.2) ? r.int(0, n - 1) : -1
    const ddlAt = commit && n > 1 && r.chance(0.06) ? r.int(0, n - 1) : -1
    const statements: string[] = []
    for (let i = 0; i < n; i++) {
      // A savepoint rolled back: its statements must never reach the replica.
      if (i === savepointAt) statements.push('SAVEPOINT s', this.dml(), this.dml(), 'ROLLBACK TO SAVEPOINT s')
      if (i === ddlAt) statements.push(this.ddl(true))
      statements.push(this.dml())
    }
    // Rolled back with its transaction: the model never sees it.
    if (!commit && r.chance(0.1)) statements.push(this.ddl(false))
    return { statements, commit }
  }
}

// ---------------------------------------------------------------- runner

export interface FuzzOptions {
  seed: number
  /** Statements to run (row statements and DDL; BEGIN/COMMIT/SAVEPOINT not counted). */
  ops: number
  /** Catch up and compare every this many statements (0: only at the end). */
  checkpointEvery?: number
  /** Acknowledge the applied position every this many transactions. */
  ackEvery?: number
  /**
   * Reconnect the stream after one transaction in this many, on average, at
   * whatever point the stream has reached (maybe inside a transaction); 0: never.
   */
  restartEvery?: number
  log?: (line: string) => void
}

export interface FuzzResult {
  seed: number
  ops: number
  transactions: number
  rolledBack: number
  tables: number
  checkpoints: number
  restarts: number
  /** pgoutput messages the replica applied. */
  messages: number
  /** Messages by tag, old tuples by kind ('K' key, 'O' full row), 'u' unchanged TOAST values. */
  seen: Record<string, number>
  /** Change-log rows left on the primary after the final acknowledgement and prune. */
  changeLogRows: number
  ms: number
  /** Of ms: waiting for the replica to catch up, and comparing. */
  catchUpMs: number
  compareMs: number
}

export class ReplicaFuzzFailure extends Error {
  constructor(
    readonly seed: number,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`replica fuzz failed (seed ${seed}; replay: npm run fuzz:replica -- --seed ${seed} --ops N): ${message}`, options)
    this.name = 'ReplicaFuzzFailure'
  }
}

function describeDiff(d: TableDiff): string {
  const rows = (label: string, xs?: string[]) => (xs?.length ? `\n  ${label}:\n${xs.map((x) => `    ${JSON.stringify(x.length > 300 ? x.slice(0, 300) + '…' : x)}`).join('\n')}` : '')
  return `table ${d.table}: ${d.problem}${rows('only on the primary', d.primaryRows)}${rows('only on the replica', d.replicaRows)}`
}

export async function runReplicaFuzz(opts: FuzzOptions): Promise<FuzzResult> {
  const started = Date.now()
  const { seed } = opts
  const checkpointEvery = opts.checkpointEvery ?? 2500
  const ackEvery = opts.ackEvery ?? 25
  const restartEvery = opts.restartEvery ?? 300
  // Its own sequence, so the workload is the same with or without restarts.
  const restartRand = prng(seed ^ 0x5bd1e995)
  let restarts = 0
  const work = new Workload(seed)
  const primary = new PGlite()
  const replica = new PGlite()
  const recent: string[] = []
  let stream: StreamedReplica | null = null
  let ops = 0
  let transactions = 0
  let rolledBack = 0
  let checkpoints = 0
  let catchUpMs = 0
  let compareMs = 0

  const check = async (where: string): Promise<void> => {
    const t0 = Date.now()
    try {
      await stream!.catchUp()
    } catch (e) {
      throw new ReplicaFuzzFailure(seed, `the replica failed ${where}: ${e instanceof Error ? e.message : String(e)}\n  recent statements:\n    ${recent.join('\n    ')}`, { cause: e })
    }
    const t1 = Date.now()
    catchUpMs += t1 - t0
    const diff = await compareDatabases(primary, replica)
    compareMs += Date.now() - t1
    if (diff) throw new ReplicaFuzzFailure(seed, `${where}: ${describeDiff(diff)}\n  recent statements:\n    ${recent.join('\n    ')}`)
    checkpoints++
    opts.log?.(`seed ${seed}: ${ops} statements, ${transactions} transactions: replica equals primary (${where})`)
  }

  try {
    stream = await streamInto(primary, replica, { slot: 'fuzz', publication: 'fuzz', setupSql: work.setupSql() })

    let nextCheckpoint = checkpointEvery || Infinity
    while (ops < opts.ops) {
      const step = work.next()
      const sql = step.statements.length === 1 && step.commit
        ? step.statements[0]
        : `BEGIN; ${step.statements.join('; ')}; ${step.commit ? 'COMMIT' : 'ROLLBACK'}`
      recent.push(sql.length > 400 ? sql.slice(0, 400) + '…' : sql)
      if (recent.length > 12) recent.shift()
      try {
        await primary.exec(sql)
      } catch (e) {
        // A statement the generator should never produce: a generator bug, still reported with the seed.
        if (primary.isInTransaction?.()) await primary.exec('ROLLBACK')
        throw new ReplicaFuzzFailure(seed, `the primary refused a statement: ${e instanceof Error ? e.message : String(e)}\n  ${sql}`, { cause: e })
      }
      ops += step.statements.filter((s) => s !== 'SAVEPOINT s' && s !== 'ROLLBACK TO SAVEPOINT s').length
      transactions++
      if (!step.commit) rolledBack++
      if (transactions % ackEvery === 0) stream.ack()
      if (restartEvery > 0 && restartRand() * restartEvery < 1) {
        await stream.restart()
        restarts++
      }
      if (ops >= nextCheckpoint) {
        nextCheckpoint += checkpointEvery
        await check(`at checkpoint ${checkpoints + 1}`)
      }
    }
    await check('at the end')
    stream.ack()
    const messages = stream.messages
    const seen = stream.seen
    await stream.stop() // persists the acknowledgement
    stream = null
    await pruneNow(primary)
    const left = await primary.query<{ n: number }>('SELECT count(*)::int AS n FROM _tabgres.changes')
    return {
      seed,
      ops,
      transactions,
      rolledBack,
      tables: work.tables.length,
      checkpoints,
      restarts,
      messages,
      seen,
      changeLogRows: left.rows[0].n,
      ms: Date.now() - started,
      catchUpMs,
      compareMs,
    }
  } finally {
    await stream?.stop().catch(() => {})
    await primary.close()
    await replica.close()
  }
}
