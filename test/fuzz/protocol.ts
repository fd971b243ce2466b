// Protocol fuzz: random and mutated replication commands, standby feedback
// frames and wire-protocol conversations against the command handler, a
// streaming session and the wire session, all in-process on one PGlite.
//
// Every case must end in an ErrorResponse carrying a SQLSTATE, a normal reply
// or a clean close: no exception escapes, no internal error (XX000), no hang
// (a per-case deadline fails the run and prints the case), and the engine is
// idle again after each case. After the run a sentinel table is unchanged and
// a fresh session still works: SELECT 1, and a committed insert streams to a
// new slot. Cases derive from (seed, index), so one failing case reproduces.
//
// CLI: npm run fuzz:protocol -- --cases 100000 [--seed S] [--case I (replay one case)]
// FUZZ_TRACE=1 prints every case before it runs (for a case that kills the process).

import { PGlite } from '@electric-sql/pglite'
import { pathToFileURL } from 'node:url'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import { ProtocolError } from '../../src/protocol/bytes'
import { PgError } from '../../src/protocol/errors'
import { decodeFrame, encodeFrame } from '../../src/protocol/replication-frames'
import { installChangeTracking } from '../../src/engine/install'
import { idle } from '../../src/engine/replication/exclusive'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import * as w from './wire-client'

// ---------------------------------------------------------------- PRNG

/** mulberry32: small, fast, good enough to drive a fuzzer reproducibly. */
export class Rng {
  private s: number
  constructor(seed: number) {
    this.s = seed >>> 0
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<T>(a: readonly T[]): T {
    return a[this.int(a.length)]
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n)
    for (let i = 0; i < n; i++) b[i] = this.int(256)
    return b
  }
}

/** The seed of case `index` in a run seeded `seed`: any case replays alone. */
export function caseSeed(seed: number, index: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(index + 1, 0xc2b2ae35)) >>> 0
}

// ---------------------------------------------------------------- cases

export type FuzzCase =
  /** (a) handleReplicationQuery(query, db) */
  | { kind: 'command'; query: string }
  /** (a) handleStartReplication(query, ...), stopped at once if it starts */
  | { kind: 'start'; query: string }
  /** (b) CopyData payloads from the consumer into a streaming session */
  | { kind: 'feedback'; frames: Uint8Array[] }
  /** (c) a wire conversation, in chunks, on a normal or replication connection */
  | { kind: 'wire'; replication: boolean; auth: 'trust' | 'password' | 'scram-sha-256'; chunks: Uint8Array[] }

/** Tables and names the fixture provides. */
export const FIXTURE = {
  sentinel: 'fuzz_sentinel',
  scratch: 'fuzz_scratch',
  publication: 'fuzz_pub',
  /** A persistent slot the start cases stream from. */
  slot: 'fuzz_slot',
  /** The slot feedback cases stream from (their random acknowledgements move it). */
  feedbackSlot: 'fuzz_feedback',
  password: 'pw',
} as const

const BAD_UTF8 = [[0xff], [0xc3, 0x28], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x82], [0xf4, 0x90, 0x80, 0x80], [0x80]]
const ODD_TEXT = ['\0', '\ud800', '\udfff', '😀', 'e\u0301', '\u202e', '\ufeff', "'", '"', '\\', ';', '--', '/*', '$$', '\n', '\t', ' ', '(', ')', ',', 'ÿ', '\u0085', '\u2028']

const COMMANDS = [
  'IDENTIFY_SYSTEM',
  'SHOW wal_level',
  'SHOW server_version',
  'SHOW "TimeZone"',
  'SHOW no_such_setting',
  'CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY LOGICAL pgoutput',
  `CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing')`,
  'CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT',
  'CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY LOGICAL test_decoding',
  'CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY PHYSICAL RESERVE_WAL',
  `CREATE_REPLICATION_SLOT fz_SLOT TEMPORARY LOGICAL pgoutput (TWO_PHASE false, SNAPSHOT 'use')`,
  'DROP_REPLICATION_SLOT fz_SLOT',
  'DROP_REPLICATION_SLOT fz_SLOT WAIT',
  'READ_REPLICATION_SLOT fuzz_slot',
  'TIMELINE_HISTORY 1',
  'BASE_BACKUP',
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/0 (proto_version '1', publication_names 'fuzz_pub')`,
  "SELECT current_setting('wal_level')",
  'ALTER ROLE postgres REPLICATION',
  'SELECT 1',
]

const START = [
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/0 (proto_version '1', publication_names 'fuzz_pub')`,
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/16B3748 (proto_version '1', publication_names '"fuzz_pub",fuzz_pub', messages 'true')`,
  `START_REPLICATION SLOT fuzz_slot LOGICAL FFFFFFFF/FFFFFFFF (proto_version '1', publication_names 'fuzz_pub', binary 'false', streaming 'off', origin 'any')`,
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/0 (proto_version '2', publication_names 'fuzz_pub')`,
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/0 (proto_version '1', publication_names 'missing_pub')`,
  `START_REPLICATION SLOT no_such_slot LOGICAL 0/0 (proto_version '1', publication_names 'fuzz_pub')`,
  `START_REPLICATION SLOT fuzz_slot LOGICAL 0/0`,
  `START_REPLICATION SLOT fuzz_slot PHYSICAL 0/0 TIMELINE 1`,
  `START_REPLICATION 0/0`,
]

/** Random edits to a command's text: characters, quotes, odd unicode, cuts, repeats. */
function mutateText(rng: Rng, s: string): string {
  const edits = 1 + rng.int(3)
  for (let e = 0; e < edits; e++) {
    const at = rng.int(s.length + 1)
    switch (rng.int(8)) {
      case 0:
        s = s.slice(0, at) + rng.pick(ODD_TEXT) + s.slice(at)
        break
      case 1:
        s = s.slice(0, at) + s.slice(at + 1 + rng.int(4))
        break
      case 2:
        s = s.slice(0, at)
        break
      case 3:
        s = s.slice(0, at) + String.fromCharCode(rng.int(0x80)) + s.slice(at + 1)
        break
      case 4:
        s = s.slice(0, at) + String.fromCharCode(rng.int(0x10000)) + s.slice(at)
        break
      case 5:
        s = s + rng.pick([' ;', '; SELECT 2', ' (', ')', ", x 'y'", ' WAIT', ' TEMPORARY', '; BEGIN', ' -- c', '\n'])
        break
      case 6:
        s = s.slice(0, at) + s.slice(rng.int(s.length)) // splice in a piece of itself
        break
      default:
        s = s.slice(0, at) + 'x'.repeat(rng.pick([63, 64, 200, 5000])) + s.slice(at)
    }
  }
  return s
}

function randomText(rng: Rng): string {
  let s = ''
  const n = rng.int(40)
  for (let i = 0; i < n; i++) s += rng.chance(0.3) ? rng.pick(ODD_TEXT) : String.fromCharCode(rng.chance(0.8) ? 32 + rng.int(95) : rng.int(0x10000))
  return s
}

function commandCase(rng: Rng, index: number): FuzzCase {
  const base = rng.pick(COMMANDS).replace('SLOT', `${index}`)
  const query = rng.chance(0.1) ? randomText(rng) : rng.chance(0.15) ? base : mutateText(rng, base)
  return { kind: 'command', query }
}

function startCase(rng: Rng): FuzzCase {
  const base = rng.pick(START)
  return { kind: 'start', query: rng.chance(0.2) ? base : mutateText(rng, base) }
}

const u64 = (rng: Rng): bigint =>
  rng.pick([0n, 1n, 0x1000000n + BigInt(rng.int(1 << 20)), 0xffffffffffffffffn, 0x8000000000000000n, (BigInt(rng.int(2 ** 31)) << 32n) | BigInt(rng.int(2 ** 31))])

function feedbackFrame(rng: Rng): Uint8Array {
  const valid = encodeFrame({ tag: 'r', written: u64(rng), flushed: u64(rng), applied: u64(rng), clock: u64(rng) & 0x7fffffffffffffffn, replyRequested: rng.chance(0.3) })
  switch (rng.int(8)) {
    case 0:
      return valid
    case 1:
      return valid.subarray(0, rng.int(valid.length)) // truncated (empty included)
    case 2:
      return w.concat([valid, rng.bytes(1 + rng.int(8))]) // trailing bytes
    case 3:
      return encodeFrame({ tag: 'k', walEnd: u64(rng), clock: 0n, replyRequested: rng.chance(0.5) })
    case 4: {
      const b = valid.slice()
      b[0] = rng.int(256) // unknown (or 'h', 'w') tag
      return b
    }
    case 5:
      return rng.bytes(rng.int(64))
    case 6: {
      const b = valid.slice()
      for (let i = 0; i < 3; i++) b[rng.int(b.length)] = rng.int(256)
      return b
    }
    default:
      return w.concat([new Uint8Array([0x77]), rng.bytes(rng.int(40))]) // an XLogData 'w' from the client
  }
}

function feedbackCase(rng: Rng): FuzzCase {
  return { kind: 'feedback', frames: Array.from({ length: 1 + rng.int(12) }, () => feedbackFrame(rng)) }
}

// Conversations as real clients send them (psql, node-postgres, pg_recvlogical).

function normalConversation(rng: Rng, index: number): Uint8Array[] {
  const out = [w.startup({ user: 'postgres', database: 'postgres', application_name: rng.pick(['psql', 'fuzz', '']), client_encoding: 'UTF8' })]
  const id = index % 100000
  const pieces: (() => Uint8Array[])[] = [
    () => [w.query('SELECT 1')],
    () => [w.query(`INSERT INTO fuzz_scratch VALUES (${id}, 'v${id}')`)],
    () => [w.query('BEGIN'), w.query(`INSERT INTO fuzz_scratch VALUES (${id}, 'tx')`), w.query(rng.pick(['COMMIT', 'ROLLBACK', 'SELECT 1/0', 'COMMIT']))],
    () => [w.parse('', 'SELECT $1::int + 1', [23]), w.bind('', '', ['41']), w.describe('P', ''), w.execute('', 0), w.sync()],
    () => [w.parse('s1', 'SELECT $1::text', [25]), w.bind('p1', 's1', ['x']), w.execute('p1', 1), w.close('P', 'p1'), w.sync()],
    () => [w.parse('', `INSERT INTO fuzz_scratch VALUES ($1, $2)`, []), w.bind('', '', [`${id}`, null]), w.execute(''), w.sync()],
    () => [w.query('COPY fuzz_scratch FROM STDIN'), w.copyData(new TextEncoder().encode(`${id}\tcopied\n`)), w.copyDone()],
    () => [w.query('COPY fuzz_scratch FROM STDIN'), w.copyData(rng.bytes(rng.int(20))), w.copyFail('nope')],
    () => [w.query('SELECT id, v FROM fuzz_scratch ORDER BY id DESC LIMIT 2')],
    () => [w.query("SET application_name = 'fz'; SHOW application_name")],
    () => [w.query("SELECT pg_logical_emit_message(true, 'fz', 'x')")],
    () => [w.flush(), w.sync()],
    () => [w.query('SELECT count(*) FROM fuzz_sentinel')],
  ]
  for (let n = 1 + rng.int(4); n > 0; n--) out.push(...rng.pick(pieces)())
  if (rng.chance(0.3)) out.push(w.terminate())
  return out
}

function replicationConversation(rng: Rng, index: number): Uint8Array[] {
  const slot = `fz_${index}`
  const out = [w.startup({ user: 'postgres', database: 'postgres', replication: 'database', application_name: 'pg_recvlogical' })]
  const r = (reply: boolean, flushed = 0n) =>
    w.copyData(encodeFrame({ tag: 'r', written: flushed, flushed, applied: flushed, clock: 0n, replyRequested: reply }))
  const create = w.query(`CREATE_REPLICATION_SLOT ${slot} TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing')`)
  const start = w.query(`START_REPLICATION SLOT ${slot} LOGICAL 0/0 (proto_version '1', publication_names '${FIXTURE.publication}')`)
  const pieces: (() => Uint8Array[])[] = [
    () => [w.query('IDENTIFY_SYSTEM')],
    () => [w.query('SHOW wal_level')],
    () => [create],
    () => [create, start, r(true), r(false, 0x1000000n), w.copyDone()],
    () => [create, start, w.copyData(rng.bytes(rng.int(40))), w.copyDone()],
    () => [create, start, r(true)],
    () => [w.query('SELECT 1')],
    () => [w.query(`DROP_REPLICATION_SLOT ${slot}`)],
    () => [w.query(`READ_REPLICATION_SLOT ${slot}`)],
    () => [w.query('BEGIN'), w.query('SELECT 1'), w.query('COMMIT')],
  ]
  for (let n = 1 + rng.int(3); n > 0; n--) out.push(...rng.pick(pieces)())
  if (rng.chance(0.2)) out.push(w.terminate())
  return out
}

function setLength(m: Uint8Array, len: number, at: number): Uint8Array {
  const b = m.slice()
  if (b.length >= at + 4) new DataView(b.buffer).setInt32(at, len)
  return b
}

/** One mutation of one message; lengths are fixed up unless the mutation is the length. */
function mutateMessage(rng: Rng, m: Uint8Array, first: boolean): Uint8Array {
  const lenAt = first ? 0 : 1
  const bodyAt = first ? 8 : 5
  const body = m.subarray(bodyAt)
  const rebuild = (b: Uint8Array) => (first ? w.concat([w.int32(b.length + 8), m.subarray(4, 8), b]) : w.msg(String.fromCharCode(m[0]), b))
  switch (rng.int(10)) {
    case 0:
      return m.subarray(0, rng.int(m.length)) // truncated, length field kept
    case 1:
      return setLength(m, rng.pick([0x7fffffff, 0x40000000, 0x3fffffff, m.length + 1 + rng.int(100), -1, 0, 3, 4, 7, 10001]), lenAt)
    case 2: {
      if (first) return setLength(m, m.length, 4) // a nonsense protocol/request code
      const b = m.slice()
      b[0] = rng.int(256) // unknown tag
      return b
    }
    case 3: {
      const at = rng.int(body.length + 1)
      return rebuild(w.concat([body.subarray(0, at), new Uint8Array(rng.pick(BAD_UTF8)), body.subarray(at)]))
    }
    case 4: {
      const nul = body.lastIndexOf(0)
      return nul < 0 ? m : rebuild(w.concat([body.subarray(0, nul), body.subarray(nul + 1)])) // no terminator
    }
    case 5:
      return rebuild(rng.bytes(rng.int(64))) // garbage body, right length
    case 6:
      return rebuild(w.concat([body, rng.bytes(1 + rng.int(16))])) // trailing bytes
    case 7: {
      const b = m.slice()
      for (let i = 1 + rng.int(4); i > 0; i--) b[rng.int(b.length)] ^= 1 << rng.int(8)
      return b
    }
    case 8: {
      const b = m.slice()
      for (let i = 1 + rng.int(4); i > 0; i--) b[bodyAt + rng.int(Math.max(1, b.length - bodyAt))] = rng.int(256)
      return b.subarray(0, m.length)
    }
    default:
      return rebuild(body.subarray(0, rng.int(body.length + 1))) // truncated body, consistent length
  }
}

function mutateConversation(rng: Rng, msgs: Uint8Array[]): Uint8Array[] {
  const out = msgs.slice()
  for (let n = 1 + rng.int(3); n > 0; n--) {
    const i = rng.int(out.length)
    switch (rng.int(6)) {
      case 0:
        if (out.length > 1) out.splice(i, 1)
        break
      case 1:
        out.splice(i, 0, out[i])
        break
      case 2:
        if (i + 1 < out.length) [out[i], out[i + 1]] = [out[i + 1], out[i]]
        break
      case 3:
        out.splice(1 + rng.int(out.length), 0, w.msg(String.fromCharCode(rng.pick([rng.int(256), ...'QPBDECSHFdcfpX'.split('').map((c) => c.charCodeAt(0))])), rng.bytes(rng.int(32))))
        break
      default:
        out[i] = mutateMessage(rng, out[i], i === 0)
    }
  }
  return out
}

/** Split a byte stream at random points, sometimes into single bytes. */
function chunk(rng: Rng, bytes: Uint8Array): Uint8Array[] {
  if (bytes.length < 200 && rng.chance(0.05)) return Array.from(bytes, (b) => new Uint8Array([b]))
  const cuts = new Set<number>()
  for (let n = rng.int(4); n > 0; n--) cuts.add(1 + rng.int(Math.max(1, bytes.length - 1)))
  const points = [0, ...[...cuts].sort((a, b) => a - b).filter((c) => c < bytes.length), bytes.length]
  return points.slice(1).map((p, i) => bytes.subarray(points[i], p)).filter((c) => c.length)
}

function wireCase(rng: Rng, index: number, replication: boolean): FuzzCase {
  const auth = rng.chance(0.85) ? 'trust' : rng.pick(['password', 'scram-sha-256'] as const)
  let msgs = replication ? replicationConversation(rng, index) : normalConversation(rng, index)
  if (auth === 'password') msgs.splice(1, 0, w.password(rng.chance(0.7) ? FIXTURE.password : 'wrong'))
  if (auth === 'scram-sha-256') msgs.splice(1, 0, w.msg('p', w.cstr('SCRAM-SHA-256'), w.int32(-1)), w.msg('p', rng.bytes(rng.int(60))))
  if (rng.chance(0.1)) msgs.unshift(w.sslRequest())
  const roll = rng.next()
  if (roll < 0.04) msgs = [rng.bytes(rng.int(200))] // nothing but noise
  else if (roll < 0.08) msgs = [msgs[0], rng.bytes(rng.int(200))] // noise after a good start-up
  else if (roll < 0.1) msgs = [w.cancelRequest(rng.int(2000), rng.int(2 ** 31))]
  else if (roll > 0.2) msgs = mutateConversation(rng, msgs)
  let bytes = w.concat(msgs)
  if (rng.chance(0.05)) bytes = bytes.subarray(0, rng.int(bytes.length + 1))
  return { kind: 'wire', replication, auth, chunks: chunk(rng, bytes) }
}

/** The case for (seed, index). */
export function generateCase(seed: number, index: number): FuzzCase {
  const rng = new Rng(caseSeed(seed, index))
  const r = rng.next()
  if (r < 0.22) return commandCase(rng, index)
  if (r < 0.3) return startCase(rng)
  if (r < 0.38) return feedbackCase(rng)
  return wireCase(rng, index, r < 0.66)
}

export function describeCase(c: FuzzCase): string {
  switch (c.kind) {
    case 'command':
    case 'start':
      return `${c.kind} ${JSON.stringify(c.query)} utf8=${w.hex(new TextEncoder().encode(c.query))}`
    case 'feedback':
      return `feedback frames=[${c.frames.map(w.hex).join(', ')}]`
    case 'wire':
      return `wire replication=${c.replication} auth=${c.auth} chunks=[${c.chunks.map(w.hex).join(', ')}]`
  }
}

// ---------------------------------------------------------------- checks

class CaseFailure extends Error {}

function fail(why: string): never {
  throw new CaseFailure(why)
}

/** Resolves with p, or fails the case when it takes longer than ms. */
async function deadline<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new CaseFailure(`hang: ${what} did not finish within ${ms} ms`)), ms))),
    ])
  } finally {
    clearTimeout(timer)
  }
}

/** Backend bytes must frame; every error must carry a SQLSTATE and none be an internal one. */
function checkBackend(bytes: Uint8Array | Uint8Array[]): w.BackendMessage[] {
  let msgs: w.BackendMessage[]
  try {
    msgs = Array.isArray(bytes) ? bytes.flatMap((b) => w.splitBackend(b)) : w.splitBackend(bytes)
  } catch (e) {
    fail(String(e))
  }
  for (const m of msgs) {
    if (m.tag !== 'E') continue
    const f = w.errorFields(m.body)
    if (!/^[0-9A-Z]{5}$/.test(f.C ?? '')) fail(`ErrorResponse without a SQLSTATE: ${JSON.stringify(f)}`)
    // PostgreSQL's own XX000s (e.g. "cache lookup failed for type" for a bad
    // parameter type OID) come from its C code and name the file; one without
    // is a JavaScript exception the engine turned into an error.
    if (f.C === 'XX000' && !f.F) fail(`internal error: ${JSON.stringify(f)}`)
  }
  return msgs
}

// ---------------------------------------------------------------- runner

export interface FuzzOptions {
  cases: number
  seed: number
  /** Per-case deadline (a hang fails the run). */
  deadlineMs?: number
  /** Run only this case of the seed (to replay a failure). */
  only?: number
  /** Progress callback every 1000 cases. */
  progress?: (done: number) => void
}

export interface FuzzReport {
  seed: number
  cases: number
  byKind: Record<string, number>
  /** Milliseconds spent per kind (the engine-idle check included). */
  msByKind: Record<string, number>
  /** How cases ended, e.g. "wire:closed", "command:E:42601". */
  outcomes: Record<string, number>
  ms: number
}

export class FuzzFailure extends Error {
  constructor(
    readonly seed: number,
    readonly index: number,
    readonly fuzzCase: FuzzCase | null,
    why: string,
  ) {
    super(`protocol fuzz failed: seed=${seed} case=${index}: ${why}\n  case: ${fuzzCase ? describeCase(fuzzCase) : '(after the run)'}`)
  }
}

interface Fixture {
  db: PGlite
  sentinel: string
}

const SENTINEL_SQL = `SELECT string_agg(id || ':' || v, '|' ORDER BY id) FROM fuzz_sentinel`

async function makeFixture(): Promise<Fixture> {
  const db = new PGlite()
  await installChangeTracking(db, { retention: 'discard' })
  await db.exec(`CREATE TABLE fuzz_sentinel (id int PRIMARY KEY, v text NOT NULL);
    INSERT INTO fuzz_sentinel VALUES (1, 'one'), (2, 'two ''quoted'' "double" \\ ;'), (3, '😀 e' || chr(769));
    CREATE TABLE fuzz_scratch (id int, v text);
    CREATE PUBLICATION fuzz_pub FOR ALL TABLES`)
  for (const slot of [FIXTURE.slot, FIXTURE.feedbackSlot]) {
    const r = await handleReplicationQuery(`CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput`, db)
    if (!r || r[0] === 0x45) throw new Error(`fixture: cannot create slot ${slot}`)
  }
  const sentinel = (await db.query<{ string_agg: string }>(SENTINEL_SQL)).rows[0].string_agg
  return { db, sentinel }
}

type Outcome = string

async function runCommand(db: PGlite, c: Extract<FuzzCase, { kind: 'command' }>, ms: number): Promise<Outcome> {
  const reply = await deadline(handleReplicationQuery(c.query, db), ms, 'handleReplicationQuery')
  if (reply === null) return 'sql'
  if (!(reply instanceof Uint8Array)) fail('reply is not bytes')
  const msgs = checkBackend(reply)
  if (msgs.some((m) => m.tag === 'Z')) fail('reply carries a ReadyForQuery')
  const err = msgs.find((m) => m.tag === 'E')
  return err ? `E:${w.errorFields(err.body).C}` : 'ok'
}

/** Runs a START_REPLICATION; a session that starts is stopped at once. */
async function runStart(db: PGlite, query: string, ms: number): Promise<Outcome> {
  const out: Uint8Array[] = []
  let session: ReplicationSession | null = null
  const done = handleStartReplication(query, { write: (b) => void out.push(b.slice()) }, db, {
    onSession: (s) => {
      session = s
      s.stop()
    },
  })
  let error: unknown = null
  await deadline(
    done.catch((e) => void (error = e)),
    ms,
    'handleStartReplication',
  )
  const msgs = checkBackend(out)
  if (error !== null) {
    if (!(error instanceof PgError)) fail(`rejected with a non-PgError: ${String(error)}`)
    const last = msgs.at(-1)
    if (last?.tag !== 'E' || w.errorFields(last.body).C !== error.code) fail(`rejection ${error.code} without its ErrorResponse last`)
    return `E:${error.code}`
  }
  if (!session) fail('resolved without starting a session')
  if (msgs[0]?.tag !== 'W') fail('stream without CopyBothResponse')
  return 'streamed'
}

async function runFeedback(db: PGlite, c: Extract<FuzzCase, { kind: 'feedback' }>, ms: number): Promise<Outcome> {
  const out: Uint8Array[] = []
  let session: ReplicationSession | null = null
  let started!: () => void
  const ready = new Promise<void>((r) => (started = r))
  const done = handleStartReplication(
    `START_REPLICATION SLOT ${FIXTURE.feedbackSlot} LOGICAL 0/0 (proto_version '1', publication_names '${FIXTURE.publication}')`,
    { write: (b) => void out.push(b.slice()) },
    db,
    {
      onSession: (s) => {
        session = s
        started()
      },
    },
  )
  await deadline(Promise.race([ready, done]), ms, 'START_REPLICATION')
  const s = session as ReplicationSession | null
  if (!s) fail('feedback session did not start')
  let rejected = 0
  for (const f of c.frames) {
    try {
      s.receive(f)
    } catch (e) {
      // The wire session turns this into FATAL 08P01; anything else is a bug.
      if (!(e instanceof ProtocolError)) fail(`receive threw ${String(e)}`)
      rejected++
    }
  }
  // Still alive: a reply request is answered with a keepalive at once.
  const before = out.length
  s.receive(encodeFrame({ tag: 'r', written: 0n, flushed: 0n, applied: 0n, clock: 0n, replyRequested: true }))
  const answered = out.slice(before).some((b) => b[0] === 0x64 && decodeFrame(b.subarray(5)).tag === 'k')
  if (!answered) fail('no keepalive answered a reply request after the frames')
  s.endCopy()
  await deadline(done, ms, 'the stream to end after CopyDone')
  const tags = checkBackend(out).map((m) => m.tag)
  if (tags.at(-2) !== 'c' || tags.at(-1) !== 'C') fail(`stream did not end with CopyDone, CommandComplete: ${tags.slice(-3).join('')}`)
  return rejected ? 'rejected-frame' : 'accepted'
}

async function runWire(db: PGlite, c: Extract<FuzzCase, { kind: 'wire' }>, ms: number): Promise<Outcome> {
  const client = new w.InProcessClient(db, c.auth === 'trust' ? {} : { auth: c.auth, password: FIXTURE.password })
  for (const chunk of c.chunks) client.send(chunk)
  await deadline(client.settled(), ms, 'the session to handle its messages')
  const state = client.state
  const msgs = checkBackend(client.chunks.filter((b) => !(b.length === 1 && b[0] === 0x4e)))
  // A session that went quiet must have answered: unless it waits for more
  // input (a partial message, COPY, authentication, a stream), its last word
  // is ReadyForQuery, an error, or a closed connection.
  const fed = w.concat(c.chunks)
  if (!client.closed && state === 'ready') {
    const last = msgs.at(-1)
    const complete = lastFrontendIsRequest(fed)
    if (complete && last && !'ZE'.includes(last.tag)) fail(`session idle after a request without ReadyForQuery (last reply '${last.tag}')`)
  }
  const fatal = msgs.find((m) => m.tag === 'E' && w.errorFields(m.body).S === 'FATAL')
  if (fatal && !client.closed) fail('FATAL without closing the connection')
  await deadline(client.session.end(), ms, 'session.end()')
  await deadline(client.session.closed, ms, 'session.closed')
  if (client.sentAfterClose > 0 && !fatal) fail(`${client.sentAfterClose} bytes sent after close`)
  const err = msgs.find((m) => m.tag === 'E')
  return client.closed ? `closed${err ? `:${w.errorFields(err.body).C}` : ''}` : err ? `E:${w.errorFields(err.body).C}` : `ok:${state}`
}

/** True when the framed input ends in a Query or Sync (something that must be answered). */
function lastFrontendIsRequest(bytes: Uint8Array): boolean {
  // Skip the untagged start-up packet(s), then walk tagged messages.
  let off = 0
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (;;) {
    if (off + 8 > bytes.length) return false
    const len = view.getInt32(off)
    const code = view.getInt32(off + 4)
    if (len < 8 || off + len > bytes.length) return false
    off += len
    if (code === 196608) break
    if (code !== 80877103 && code !== 80877104) return false
  }
  let last = ''
  while (off + 5 <= bytes.length) {
    const len = view.getInt32(off + 1)
    if (len < 4 || off + 1 + len > bytes.length) return false
    last = String.fromCharCode(bytes[off])
    off += 1 + len
  }
  return off === bytes.length && (last === 'Q' || last === 'S')
}

/** After each case: the engine is idle (no transaction, no lock, no ignore-till-Sync). */
async function engineIdle(db: PGlite, ms: number): Promise<void> {
  const rows = await deadline(idle(db, (s) => s.query('SELECT 1')), ms, 'the engine to be idle after the case')
  if (rows[0]?.[0] !== '1') fail(`the engine answered SELECT 1 with ${JSON.stringify(rows)}`)
}

/** After the run: sentinel unchanged, a fresh session works, a committed insert streams to a new slot. */
async function finalChecks(f: Fixture, ms: number): Promise<void> {
  const { db } = f
  const now = (await db.query<{ string_agg: string }>(SENTINEL_SQL)).rows[0].string_agg
  if (now !== f.sentinel) fail(`sentinel changed: ${JSON.stringify(f.sentinel)} -> ${JSON.stringify(now)}`)
  const c = await deadline(w.connect(db), ms, 'a fresh connection')
  const one = await deadline(c.query('SELECT 1'), ms, 'SELECT 1')
  if (!one.some((m) => m.tag === 'D' && w.dataRowValues(m.body)[0] === '1')) fail('SELECT 1 on a fresh session failed')
  const slot = `fuzz_check_${Date.now()}`
  const created = await handleReplicationQuery(`CREATE_REPLICATION_SLOT ${slot} TEMPORARY LOGICAL pgoutput`, db)
  if (!created || created[0] === 0x45) fail('cannot create a check slot')
  const ins = await deadline(c.query(`INSERT INTO fuzz_scratch VALUES (-1, 'after the fuzz')`), ms, 'INSERT')
  if (!ins.some((m) => m.tag === 'C')) fail('INSERT on a fresh session failed')
  let session: ReplicationSession | null = null
  let seen!: () => void
  const got = new Promise<void>((r) => (seen = r))
  const done = handleStartReplication(
    `START_REPLICATION SLOT ${slot} LOGICAL 0/0 (proto_version '1', publication_names '${FIXTURE.publication}')`,
    {
      write(b) {
        if (b[0] !== 0x64) return
        const frame = decodeFrame(b.subarray(5))
        if (frame.tag !== 'w') return
        const m = decodePgoutput(frame.data)
        if (m.tag === 'I' && m.new.columns[1]?.kind === 't' && m.new.columns[1].value === 'after the fuzz') seen()
      },
    },
    db,
    { onSession: (s) => (session = s) },
  )
  await deadline(got, ms, 'the committed insert to stream')
  ;(session as ReplicationSession | null)?.stop()
  await deadline(done, ms, 'the check stream to stop')
  c.send(w.terminate())
  await deadline(c.session.closed, ms, 'the check session to close')
}

export async function runProtocolFuzz(opts: FuzzOptions): Promise<FuzzReport> {
  const ms = opts.deadlineMs ?? 10_000
  const t0 = performance.now()
  const f = await makeFixture()
  const byKind: Record<string, number> = {}
  const msByKind: Record<string, number> = {}
  const outcomes: Record<string, number> = {}
  const escaped: unknown[] = []
  const onEscape = (e: unknown) => void escaped.push(e)
  let index = -1
  let current: FuzzCase | null = null
  let finished = false
  // A case that kills the process (or leaves nothing to wake the event loop)
  // still says which case it was.
  const onExit = () => {
    const during = current ? `case=${index}\n  case: ${describeCase(current)}` : 'the final checks'
    if (!finished) process.stderr.write(`protocol fuzz: process exiting during seed=${opts.seed} ${during}\n`)
  }
  process.on('unhandledRejection', onEscape)
  process.on('uncaughtException', onEscape)
  process.on('exit', onExit)
  try {
    for (index = opts.only ?? 0; index < (opts.only === undefined ? opts.cases : opts.only + 1); index++) {
      current = generateCase(opts.seed, index)
      if (process.env.FUZZ_TRACE) process.stderr.write(`case ${index}: ${describeCase(current)}\n`)
      byKind[current.kind] = (byKind[current.kind] ?? 0) + 1
      const caseStart = performance.now()
      let outcome: Outcome
      switch (current.kind) {
        case 'command':
          outcome = await runCommand(f.db, current, ms)
          break
        case 'start':
          outcome = await runStart(f.db, current.query, ms)
          break
        case 'feedback':
          outcome = await runFeedback(f.db, current, ms)
          break
        case 'wire':
          outcome = await runWire(f.db, current, ms)
          break
      }
      await engineIdle(f.db, ms)
      // Let stray rejections of this case surface before blaming the next one.
      await new Promise((r) => setImmediate(r))
      if (escaped.length) fail(`unhandled: ${String(escaped[0])}`)
      msByKind[current.kind] = Math.round((msByKind[current.kind] ?? 0) + performance.now() - caseStart)
      const key = `${current.kind}:${outcome}`
      outcomes[key] = (outcomes[key] ?? 0) + 1
      if ((index + 1) % 1000 === 0) opts.progress?.(index + 1)
    }
    current = null
    await finalChecks(f, ms)
    finished = true
  } catch (e) {
    finished = true
    const why = e instanceof CaseFailure ? e.message : `threw: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`
    throw new FuzzFailure(opts.seed, index, current, why)
  } finally {
    process.off('unhandledRejection', onEscape)
    process.off('uncaughtException', onEscape)
    process.off('exit', onExit)
    // After a failure a session may still hold the database: do not wait on it.
    await deadline(f.db.close(), ms, 'db.close()').catch(() => {})
  }
  return { seed: opts.seed, cases: opts.cases, byKind, msByKind, outcomes, ms: Math.round(performance.now() - t0) }
}

// ---------------------------------------------------------------- CLI

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

async function main(): Promise<void> {
  const cases = Number(arg('cases') ?? 100_000)
  const seed = Number(arg('seed') ?? Math.floor(Math.random() * 2 ** 31))
  const only = arg('case') === undefined ? undefined : Number(arg('case'))
  console.log(`protocol fuzz: ${only === undefined ? `${cases} cases` : `case ${only}`}, seed ${seed}`)
  try {
    const report = await runProtocolFuzz({ cases, seed, only, progress: (n) => console.log(`  ${n} cases`) })
    console.log(JSON.stringify(report, null, 2))
  } catch (e) {
    console.error(e instanceof Error ? e.message : e)
    process.exitCode = 1
  }
  // A failed run may leave engine loops polling: they must not keep the process alive.
  process.exit()
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) void main()
