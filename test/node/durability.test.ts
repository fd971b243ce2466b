// Durable slots and LSNs: acknowledgements persist, the change log is pruned
// behind the slowest slot, and a consumer that acknowledges resumes across
// engine restarts with nothing lost and nothing repeated.
// Waits are on frames and promises (test/support/consumer.ts), never timers.

import { PGlite } from '@electric-sql/pglite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { formatLsn, parseLsn, type Lsn } from '../../src/protocol/lsn'
import { installChangeTracking, type TrackingOptions } from '../../src/engine/install'
import { encodeFrame } from '../../src/protocol/replication-frames'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import { pruneNow } from '../../src/engine/replication/prune'
import { Consumer } from '../support/consumer'
import { recordStream } from '../support/stream'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tabgres-durability-'))
  dirs.push(d)
  return d
}

/** mulberry32: a small seeded PRNG, so a failing run can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

async function open(dataDir: string | undefined, options: TrackingOptions = {}): Promise<PGlite> {
  const db = new PGlite(dataDir)
  await installChangeTracking(db, options)
  return db
}

async function command(db: PGlite, sql: string): Promise<void> {
  const reply = await handleReplicationQuery(sql, db)
  if (reply && reply[0] === 0x45) throw new Error(`${sql}: ${new TextDecoder().decode(reply.subarray(5))}`)
}

async function walLsn(db: PGlite): Promise<Lsn> {
  const { rows } = await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')
  return parseLsn(rows[0].l)!
}

async function count(db: PGlite, table: string): Promise<number> {
  return (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0].n
}

async function primaryRows(db: PGlite): Promise<Map<string, (string | null)[]>> {
  const { rows } = await db.query<{ id: string; v: string | null }>('SELECT id::text AS id, v FROM t ORDER BY id')
  return new Map(rows.map((r) => [r.id, [r.id, r.v]]))
}

const SCHEMA = `CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR TABLE t;`

describe('restarts', () => {
  it('a consumer that acknowledges resumes across 24 engine restarts in 1,000 transactions: no loss, no repeat, LSNs only grow', async () => {
    const seed = Number(process.env.DURABILITY_SEED ?? 20261203)
    const rand = prng(seed)
    const dir = tempDir()
    const TXNS = 1000
    // 24 distinct restart points, half graceful (stop the stream, then close),
    // half hard (close the database under a running stream).
    const points = new Set<number>()
    while (points.size < 24) points.add(1 + Math.floor(rand() * (TXNS - 2)))

    let db = await open(dir)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT durable LOGICAL pgoutput')
    const consumer = new Consumer('durable', { publication: 'p', ackEvery: 3 })
    const deliveries = new Map<string, number>()
    consumer.observe((msgs) => {
      for (const m of msgs) {
        if (m.tag === 'I') {
          const id = m.new.columns[0].kind === 't' ? m.new.columns[0].value : '?'
          deliveries.set(id, (deliveries.get(id) ?? 0) + 1)
        }
      }
    })
    await consumer.connect(db, 0n)

    const committedIds = new Set<string>()
    let lastWal = await walLsn(db)
    let restarts = 0
    try {
      for (let i = 1; i <= TXNS; i++) {
        const r = rand()
        if (r < 0.1) {
          // Rolled back: must never stream.
          await db.exec(`BEGIN; INSERT INTO t VALUES (${-i}, 'rolled back'); ROLLBACK;`)
        } else if (r < 0.3) {
          await db.transaction(async (tx) => {
            await tx.query('INSERT INTO t VALUES ($1, $2)', [i, `multi ${i}`])
            await tx.query(`UPDATE t SET v = v || ' +' WHERE id IN (SELECT id FROM t WHERE id > 0 ORDER BY id DESC LIMIT 2 OFFSET 1)`)
            if (i % 5 === 0) await tx.query('DELETE FROM t WHERE id = (SELECT min(id) FROM t WHERE id > 0)')
          })
          committedIds.add(String(i))
        } else {
          await db.query('INSERT INTO t VALUES ($1, $2)', [i, `row ${i}`])
          committedIds.add(String(i))
        }
        if (!points.has(i)) continue
        const graceful = restarts % 2 === 0
        if (graceful) {
          // A consumer shutting down acknowledges what it applied (pg_recvlogical does).
          consumer.ack()
          await consumer.stop()
          await db.close()
        } else {
          await db.close()
          await consumer.ended()
        }
        restarts++
        db = await open(dir)
        const wal = await walLsn(db)
        expect(wal, `position after restart ${restarts}`).toBeGreaterThanOrEqual(lastWal)
        lastWal = wal
        // Graceful: the acknowledgements were persisted, so the slot alone says
        // where to resume. Hard: the consumer asks for its own position, as
        // real consumers do with the LSN they stored beside their data.
        await consumer.connect(db, graceful ? 0n : consumer.lastCommit)
      }
      const target = await walLsn(db)
      expect(target).toBeGreaterThanOrEqual(lastWal)
      await db.query(`INSERT INTO t VALUES (${TXNS + 1}, 'last')`)
      committedIds.add(String(TXNS + 1))
      await consumer.until(() => deliveries.has(String(TXNS + 1)))

      expect(restarts).toBe(24)
      const repeated = [...deliveries].filter(([, n]) => n > 1)
      expect(repeated, `seed ${seed}: delivered more than once`).toEqual([])
      expect(new Set(deliveries.keys()), `seed ${seed}: delivered set`).toEqual(committedIds)
      expect(consumer.table('t'), `seed ${seed}: replica equals primary`).toEqual(await primaryRows(db))
      for (let k = 1; k < consumer.commitLsns.length; k++) {
        expect(consumer.commitLsns[k] > consumer.commitLsns[k - 1], `commit LSN ${k} grows`).toBe(true)
      }
    } finally {
      await consumer.stop().catch(() => {})
      await db.close()
    }
  }, 300_000)
})

describe('acknowledgements and pruning', () => {
  it('prunes what the slot confirmed; a restart from 0/0 re-sends exactly the rest', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT acked LOGICAL pgoutput')
    const c = new Consumer('acked', { publication: 'p', ackEvery: 0 })
    await c.connect(db, 0n)
    for (let i = 1; i <= 100; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    await c.until(() => c.commitLsns.length === 100)
    const confirmed = c.commitLsns[49]
    c.ack(confirmed)
    await c.stop() // persists the acknowledgement
    const slot = await db.query<{ confirmed_flush_lsn: string }>(
      `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'acked'`,
    )
    expect(slot.rows).toEqual([{ confirmed_flush_lsn: formatLsn(confirmed) }])

    // Pruning also runs by itself after an acknowledgement; this one waits for it.
    await pruneNow(db)
    expect(await count(db, '_tabgres.changes')).toBe(50)

    const again = new Consumer('acked', { publication: 'p', ackEvery: 0 })
    await again.connect(db, 0n)
    await again.until(() => again.commitLsns.length === 50)
    expect(again.commitLsns).toEqual(c.commitLsns.slice(50))
    expect([...again.table('t').keys()]).toEqual(Array.from({ length: 50 }, (_, k) => String(k + 51)))
    // A later start LSN than the slot's skips to it, as PostgreSQL does.
    await again.stop()
    const later = new Consumer('acked', { publication: 'p', ackEvery: 0 })
    await later.connect(db, c.commitLsns[89])
    await db.query(`INSERT INTO t VALUES (101, 'v101')`)
    await later.until(() => later.table('t').has('101'))
    expect([...later.table('t').keys()]).toEqual([...Array.from({ length: 10 }, (_, k) => String(k + 91)), '101'])
    await later.stop()
    await db.close()
  })

  it('an acknowledgement inside a transaction keeps that transaction whole', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT mid LOGICAL pgoutput')
    await db.exec(`INSERT INTO t VALUES (1, 'a')`)
    await db.exec(`BEGIN; INSERT INTO t VALUES (2, 'b'); INSERT INTO t VALUES (3, 'c'); INSERT INTO t VALUES (4, 'd'); COMMIT;`)
    const c = new Consumer('mid', { publication: 'p', ackEvery: 0 })
    await c.connect(db, 0n)
    await c.until(() => c.commitLsns.length === 2)
    // Between the first and the second change of the three-row transaction.
    const inside = c.commitLsns[0] + 64n + 16n
    expect(inside < c.commitLsns[1]).toBe(true)
    c.ack(inside)
    await c.stop()
    await pruneNow(db)
    expect(await count(db, '_tabgres.changes')).toBe(3)
    const again = new Consumer('mid', { publication: 'p', ackEvery: 0 })
    await again.connect(db, 0n)
    await again.until(() => again.commitLsns.length === 1)
    expect([...again.table('t').keys()]).toEqual(['2', '3', '4'])
    await again.stop()
    await db.close()
  })

  it('the slowest slot holds the horizon; dropping it releases the change log', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT fast LOGICAL pgoutput')
    await command(db, 'CREATE_REPLICATION_SLOT slow LOGICAL pgoutput')
    const fast = new Consumer('fast', { publication: 'p', ackEvery: 1 })
    await fast.connect(db, 0n)
    for (let i = 1; i <= 20; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    await fast.until(() => fast.commitLsns.length === 20)
    await fast.stop()
    await pruneNow(db)
    expect(await count(db, '_tabgres.changes')).toBe(20)
    await command(db, 'DROP_REPLICATION_SLOT slow')
    await pruneNow(db)
    expect(await count(db, '_tabgres.changes')).toBe(0)
    await db.close()
  })

  it("retention 'discard': without any slot nothing accumulates, and LSNs still grow", async () => {
    const db = await open(undefined, { retention: 'discard' })
    await db.exec(SCHEMA)
    for (let i = 1; i <= 200; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    const before = await walLsn(db)
    await pruneNow(db)
    expect(await count(db, '_tabgres.changes')).toBe(0)
    expect(await count(db, '_tabgres.xacts')).toBe(0)
    await db.query(`INSERT INTO t VALUES (201, 'after')`)
    expect(await walLsn(db)).toBeGreaterThan(before)
    // A slot made now starts at the current position: nothing earlier streams.
    await command(db, 'CREATE_REPLICATION_SLOT late LOGICAL pgoutput')
    const c = new Consumer('late', { publication: 'p' })
    await c.connect(db, 0n)
    await db.query(`INSERT INTO t VALUES (202, 'streamed')`)
    await c.until(() => c.table('t').has('202'))
    expect([...c.table('t').keys()]).toEqual(['202'])
    await c.stop()
    await db.close()
  })

  it("retention 'keep' (orez's default) keeps changes while no slot exists", async () => {
    const db = await open(undefined, { retention: 'keep' })
    await db.exec(SCHEMA)
    for (let i = 1; i <= 10; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    const r = (await pruneNow(db))!
    expect(r.changes).toBe(0)
    expect(await count(db, '_tabgres.changes')).toBe(10)
    await db.close()
  })
})

describe('pg_replication_slots', () => {
  // PostgreSQL 18's view (system_views.sql), which PGlite 0.5.17 ships empty.
  const COLUMNS = [
    'slot_name:name', 'plugin:name', 'slot_type:text', 'datoid:oid', 'database:name', 'temporary:boolean',
    'active:boolean', 'active_pid:integer', 'xmin:xid', 'catalog_xmin:xid', 'restart_lsn:pg_lsn',
    'confirmed_flush_lsn:pg_lsn', 'wal_status:text', 'safe_wal_size:bigint', 'two_phase:boolean',
    'two_phase_at:pg_lsn', 'inactive_since:timestamp with time zone', 'conflicting:boolean',
    'invalidation_reason:text', 'failover:boolean', 'synced:boolean',
  ]

  it('has PostgreSQL 18 columns and types, shows liveness and persists across a restart', async () => {
    const dir = tempDir()
    let db = await open(dir)
    await db.exec(SCHEMA)
    const cols = await db.query<{ c: string }>(
      `SELECT a.attname || ':' || format_type(a.atttypid, a.atttypmod) AS c FROM pg_attribute a
        WHERE a.attrelid = 'pg_catalog.pg_replication_slots'::regclass AND a.attnum > 0 ORDER BY a.attnum`,
    )
    expect(cols.rows.map((r) => r.c)).toEqual(COLUMNS)

    await command(db, 'CREATE_REPLICATION_SLOT kept LOGICAL pgoutput')
    const pos = formatLsn(await walLsn(db))
    const view = () =>
      db.query<Record<string, unknown>>(
        `SELECT slot_name, plugin, slot_type, database, temporary, active, active_pid, restart_lsn::text,
                confirmed_flush_lsn::text, wal_status, inactive_since IS NOT NULL AS inactive_since_set
           FROM pg_catalog.pg_replication_slots ORDER BY slot_name`,
      )
    const idleRow = {
      slot_name: 'kept', plugin: 'pgoutput', slot_type: 'logical', database: 'postgres', temporary: false,
      active: false, active_pid: null, restart_lsn: pos, confirmed_flush_lsn: pos, wal_status: 'reserved',
      inactive_since_set: true,
    }
    expect((await view()).rows).toEqual([idleRow])

    const c = new Consumer('kept', { publication: 'p', ackEvery: 1 })
    await c.connect(db, 0n)
    expect((await view()).rows).toEqual([{ ...idleRow, active: true, active_pid: 1, inactive_since_set: false }])
    await db.query(`INSERT INTO t VALUES (1, 'x')`)
    await c.until(() => c.commitLsns.length === 1)
    await c.stop()
    const acked = formatLsn(c.lastCommit)
    expect((await view()).rows).toEqual([{ ...idleRow, restart_lsn: acked, confirmed_flush_lsn: acked }])

    // A temporary slot shows while it exists and is gone after its stream ends.
    await command(db, 'CREATE_REPLICATION_SLOT temp TEMPORARY LOGICAL pgoutput')
    expect((await view()).rows.map((r) => [r.slot_name, r.temporary])).toEqual([['kept', false], ['temp', true]])
    const t = new Consumer('temp', { publication: 'p' })
    await t.connect(db, 0n)
    await t.stop()
    expect((await view()).rows.map((r) => r.slot_name)).toEqual(['kept'])

    await db.close()
    db = await open(dir)
    expect((await view()).rows).toEqual([{ ...idleRow, restart_lsn: acked, confirmed_flush_lsn: acked }])
    await db.close()
  })
})

describe('feedback', () => {
  async function stream(db: PGlite, slot: string, keepaliveMs?: number) {
    const rec = recordStream()
    let session!: ReplicationSession
    const done = handleStartReplication(
      `START_REPLICATION SLOT ${slot} LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
      rec.writer,
      db,
      { keepaliveMs, onSession: (s) => (session = s) },
    )
    await rec.waitFor((f) => f.tag === 'k')
    return { rec, session, done }
  }
  const status = (lsn: Lsn, replyRequested = false) =>
    encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: 0n, replyRequested })

  it('asks a silent consumer for a reply, and answers a reply request at once', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT quiet LOGICAL pgoutput')
    const { rec, session, done } = await stream(db, 'quiet', 200)
    const asked = await rec.waitFor((f) => f.tag === 'k' && f.replyRequested)
    expect(asked.tag).toBe('k')
    const before = rec.frames.length
    session.receive(status(0n, true))
    // The answer is a keepalive written synchronously by receive().
    expect(rec.frames.slice(before).map((f) => (f.tag === 'k' ? `k:${f.replyRequested}` : f.tag))).toEqual(['k:false'])
    session.stop()
    await done
    await db.close()
  })

  it('CopyDone persists the acknowledgement and ends like the walsender: keepalive, CopyDone, COPY 0', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT done_slot LOGICAL pgoutput')
    const { rec, session, done } = await stream(db, 'done_slot')
    await db.query(`INSERT INTO t VALUES (1, 'a')`)
    const commitFrame = await rec.waitFor((f) => f.tag === 'w' && f.data[0] === 0x43)
    const end = commitFrame.tag === 'w' ? commitFrame.walStart : 0n
    session.receive(status(end))
    const n = rec.messages.length
    session.endCopy()
    await done
    const tail = rec.messages.slice(n)
    // golden/commands.json afterClientCopyDone: d(k), c, C "COPY 0" (then the
    // wire session's own CommandComplete and ReadyForQuery).
    expect(tail.map((m) => String.fromCharCode(m[0]))).toEqual(['d', 'c', 'C'])
    expect(tail[0][5]).toBe(0x6b)
    expect(new TextDecoder().decode(tail[2].subarray(5, -1))).toBe('COPY 0')
    const slot = await db.query<{ l: string }>(`SELECT confirmed_flush_lsn::text AS l FROM pg_replication_slots WHERE slot_name = 'done_slot'`)
    expect(slot.rows[0].l).toBe(formatLsn(end))
    await db.close()
  })

  it('nothing goes out after stop(), not even the rest of a batch (regression: re-sent after restart)', async () => {
    const db = await open(undefined)
    await db.exec(SCHEMA)
    await command(db, 'CREATE_REPLICATION_SLOT halt LOGICAL pgoutput')
    const rec = recordStream()
    let session!: ReplicationSession
    let afterStop = 0
    let stopped = false
    const write = rec.writer.write.bind(rec.writer)
    rec.writer.write = (m) => {
      if (stopped) afterStop++
      write(m)
      // Stop inside the first Insert's write: the rest of its batch is in memory.
      if (!stopped && m[0] === 0x64 && m[5] === 0x77 && m[5 + 25] === 0x49) {
        stopped = true
        session.stop()
      }
    }
    const done = handleStartReplication(
      `START_REPLICATION SLOT halt LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
      rec.writer,
      db,
      { onSession: (s) => (session = s) },
    )
    await rec.waitFor((f) => f.tag === 'k')
    await db.exec(`INSERT INTO t SELECT g, 'x' FROM generate_series(1, 500) g`)
    await done
    expect(stopped).toBe(true)
    expect(afterStop).toBe(0)
    await db.close()
  })
})
