// Protocol fuzz at CI size (test/fuzz/protocol.ts): 5,000 seeded cases
// against the replication command handler, a streaming session's standby
// feedback and the wire session. A failure names its seed and case; replay it
// with `npm run fuzz:protocol -- --seed S --case I`.

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { encodeFrame } from '../../src/protocol/replication-frames'
import { installChangeTracking } from '../../src/engine/install'
import { idle } from '../../src/engine/replication/exclusive'
import { handleReplicationQuery } from '../../src/wire/walsender'
import { handleReplicationQuery as orezReplicationQuery } from '../../src/orez/handler'
import { runProtocolFuzz } from '../fuzz/protocol'
import * as w from '../fuzz/wire-client'

const SEED = Number(process.env.FUZZ_SEED ?? 20260701)

it('5,000 protocol fuzz cases: each gets an error with a SQLSTATE, a reply or a clean close; the data stays intact', async () => {
  const report = await runProtocolFuzz({ cases: 5000, seed: SEED })
  expect(report.cases).toBe(5000)
  // Every family of cases ran.
  for (const kind of ['command', 'start', 'feedback', 'wire']) expect(report.byKind[kind]).toBeGreaterThan(100)
}, 180_000)

// ---------------------------------------------------------------------------
// Bugs the fuzz found, one test each, named after what broke.


describe('wire session regressions found by the protocol fuzz', () => {
  let db: PGlite
  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(`CREATE TABLE r (id int, v text); CREATE PUBLICATION rp FOR ALL TABLES`)
  })
  afterAll(async () => {
    await db.close()
  })

  const engineIdle = () => idle(db, (s) => s.query('SELECT 1'))
  const tags = (m: w.BackendMessage[]) => m.map((x) => x.tag).join('')
  const codes = (m: w.BackendMessage[]) => m.filter((x) => x.tag === 'E').map((x) => w.errorFields(x.body).C)

  it('CopyDone pipelined right behind START_REPLICATION ends the stream (it was dropped and the session hung)', async () => {
    const c = await w.connect(db, { replication: 'database' })
    c.send(
      w.concat([
        w.query(`CREATE_REPLICATION_SLOT pipelined TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing')`),
        w.query(`START_REPLICATION SLOT pipelined LOGICAL 0/0 (proto_version '1', publication_names 'rp')`),
        w.copyData(encodeFrame({ tag: 'r', written: 0n, flushed: 0n, applied: 0n, clock: 0n, replyRequested: true })),
        w.copyDone(),
      ]),
    )
    const m = await c.until((ms) => ms.filter((x) => x.tag === 'Z').length >= 3)
    // CopyBothResponse, keepalives, CopyDone, COPY 0, START_REPLICATION, ReadyForQuery
    expect(tags(m)).toMatch(/Wd+cCCZ$/)
    c.send(w.terminate())
    await c.session.closed
  })

  it('a client that hangs up while START_REPLICATION is starting: the stream stops, nothing is sent after close', async () => {
    const c = await w.connect(db, { replication: 'database' })
    c.send(
      w.concat([
        w.query(`CREATE_REPLICATION_SLOT hangup TEMPORARY LOGICAL pgoutput`),
        w.query(`START_REPLICATION SLOT hangup LOGICAL 0/0 (proto_version '1', publication_names 'rp')`),
        w.terminate(),
      ]),
    )
    await c.session.closed
    expect(c.closed).toBe(true)
    expect(c.sentAfterClose).toBe(0)
    expect((await db.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = 'hangup'`)).rows).toEqual([])
  })

  it('a client that disconnects after a failed extended-query message leaves the engine usable (it ignored all but Sync)', async () => {
    const c = await w.connect(db)
    c.send(w.parse('', 'SELECT * FROM no_such_table'), w.bind('', '', []), w.execute(''))
    await c.until((m) => m.some((x) => x.tag === 'E'))
    await c.settled()
    await c.session.end()
    expect(await engineIdle()).toEqual([['1']])
  })

  it('COPY FROM STDIN after a failed extended-query message is ignored until Sync, as PostgreSQL does (the engine stalled)', async () => {
    const c = await w.connect(db)
    c.send(w.parse('', 'SELECT * FROM no_such_table'), w.query('COPY r FROM STDIN'), w.copyFail('x'), w.sync())
    const m = await c.until((ms) => ms.filter((x) => x.tag === 'Z').length >= 2)
    expect(tags(m).slice(-2)).toBe('EZ') // the Parse error, then Sync's ReadyForQuery: no CopyInResponse
    c.send(w.terminate())
    await c.session.closed
    expect(await engineIdle()).toEqual([['1']])
  })

  it('a simple Query inside an unfinished extended-query sequence commits it, as PostgreSQL does (PGlite lost the insert, the next statement failed XX000)', async () => {
    const c = await w.connect(db)
    c.send(w.parse('', `INSERT INTO r VALUES (1, 'pipelined')`), w.bind('', '', []), w.execute(''), w.query('SELECT 1'))
    const m = await c.until((ms) => ms.filter((x) => x.tag === 'Z').length >= 2)
    expect(tags(m).slice(-7)).toBe('12CTDCZ') // ParseComplete, BindComplete, INSERT, then the query
    expect(String.fromCharCode(m.at(-1)!.body[0])).toBe('I')
    c.send(w.terminate())
    await c.session.closed
    expect(await engineIdle()).toEqual([['1']])
    expect((await db.query(`SELECT v FROM r WHERE id = 1`)).rows).toEqual([{ v: 'pipelined' }])
  })

  it('a Parse whose parameter types are cut short gets FATAL 08P01 and never reaches PGlite (it crashed the process)', async () => {
    const c = await w.connect(db)
    const p = w.parse('', 'SELECT $1::int', [23])
    const cut = w.msg('P', p.subarray(5, p.length - 2)) // the last OID loses two bytes, the length agrees
    c.send(cut, w.sync())
    const m = await c.until(() => false)
    expect(c.closed).toBe(true)
    expect(codes(m)).toEqual(['08P01'])
    expect(w.errorFields(m.at(-1)!.body).S).toBe('FATAL')
    await c.session.closed
    expect(await engineIdle()).toEqual([['1']])
  })

  it('a query with bad UTF-8 gets ERROR 22021 and the session goes on (it was FATAL XX000)', async () => {
    const c = await w.connect(db)
    const bad = w.msg('Q', new Uint8Array([0x53, 0x45, 0x4c, 0xff, 0xfe, 0]))
    c.send(bad)
    const m = await c.until((ms) => ms.filter((x) => x.tag === 'Z').length >= 2)
    expect(codes(m)).toEqual(['22021'])
    expect(tags(await c.query('SELECT 1'))).toBe('TDCZ')
    c.send(w.terminate())
    await c.session.closed
  })

  it('stray CopyData/CopyDone/CopyFail outside COPY are ignored (they held the database with no reply)', async () => {
    const c = await w.connect(db)
    c.send(w.copyData(new Uint8Array([1, 2, 3])), w.copyDone(), w.copyFail('late'))
    await c.settled()
    // Another session gets the database at once.
    const other = await w.connect(db)
    expect(tags(await other.query('SELECT 1'))).toBe('TDCZ')
    expect(tags(await c.query('SELECT 1'))).toBe('TDCZ')
    for (const x of [c, other]) {
      x.send(w.terminate())
      await x.session.closed
    }
  })

  it('a garbage SCRAM message gets FATAL 08P01, not an internal error', async () => {
    const c = new w.InProcessClient(db, { auth: 'scram-sha-256', password: 'pw' })
    c.send(w.startup({ user: 'postgres', database: 'postgres' }), w.msg('p', w.cstr('SCRAM-SHA-256'), w.int32(1000), new Uint8Array([1, 2])))
    const m = await c.until(() => false)
    expect(codes(m)).toEqual(['08P01'])
    await c.session.closed
  })

  it("orez's wal_level shim rolls back a transaction block the query leaves open (it stalled the engine)", async () => {
    const reply = await orezReplicationQuery(`SELECT current_setting('wal_level'); BEGIN`, db)
    const m = w.splitBackend(reply!)
    expect(tags(m)).toBe('TDCCE')
    expect(codes(m)).toEqual(['0A000'])
    expect(await engineIdle()).toEqual([['1']])
  })
})
