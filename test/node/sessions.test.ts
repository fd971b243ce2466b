// Sessions sharing one backend, as PostgreSQL clients expect them to behave
// (issue #14): walsender commands never wait for another session's
// transaction, waits for the backend are bounded with PostgreSQL's SQLSTATEs,
// and exported snapshots are importable by parallel copies that read exactly
// the slot's consistent point. Real clients (node-postgres, postgres.js) on TCP.

import { PGlite } from '@electric-sql/pglite'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import postgres from 'postgres'
import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication'
import { afterAll, describe, expect, it } from 'vitest'
import { listen, type TcpServer } from '../../src/node/server'
import { installChangeTracking } from '../../src/engine/install'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

async function open(dir?: string): Promise<{ db: PGlite; server: TcpServer }> {
  const db = new PGlite(dir)
  await installChangeTracking(db, { retention: 'discard' })
  return { db, server: await listen(db) }
}

function client(port: number, replication = false): pg.Client {
  return new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    ...(replication ? { replication: 'database' } : {}),
  } as pg.ClientConfig)
}

/** The SQLSTATE of the FATAL that ended a session (pg reports it as the client's error). */
function sessionEnd(c: pg.Client): Promise<string> {
  return new Promise((resolve) => c.on('error', (e: Error) => resolve((e as { code?: string }).code ?? e.message)))
}

async function sqlState(p: Promise<unknown>): Promise<string> {
  try {
    await p
  } catch (e) {
    return (e as { code: string }).code
  }
  return 'no error'
}

describe('a transaction held open on another connection', () => {
  it('does not stop walsender commands; the slot survives its rollback and a restart; a bounded wait says 55P03', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tabgres-sessions-'))
    dirs.push(dir)
    let { db, server } = await open(dir)
    const holder = client(server.port)
    const walsender = client(server.port, true)
    const other = client(server.port)
    await Promise.all([holder.connect(), walsender.connect(), other.connect()])
    try {
      await holder.query('BEGIN')
      await holder.query('SELECT pg_advisory_xact_lock(1)')
      await holder.query(`SELECT slot_name FROM pg_replication_slots`)

      // PostgreSQL 15 answers these with the holder's transaction still open.
      await walsender.query('SET lock_timeout = 29000')
      expect((await walsender.query('SHOW lock_timeout')).rows).toEqual([{ lock_timeout: '29s' }])
      expect(await sqlState(walsender.query('SET no_such_setting = 1'))).toBe('42704')
      expect(await sqlState(walsender.query('SET lock_timeout = -1'))).toBe('22023')
      const identify = await walsender.query('IDENTIFY_SYSTEM')
      expect(identify.rows[0].dbname).toBe('postgres')
      const created = await walsender.query('CREATE_REPLICATION_SLOT held LOGICAL pgoutput')
      expect(created.rows[0].slot_name).toBe('held')
      expect(created.rows[0].snapshot_name).toMatch(/^[0-9A-F]{8}-[0-9A-F]{8}-\d+$/)

      // A normal session that set lock_timeout gets PostgreSQL's lock-wait error.
      await other.query('SET lock_timeout = 100')
      const started = performance.now()
      expect(await sqlState(other.query('SELECT 1'))).toBe('55P03')
      const waited = performance.now() - started
      expect(waited).toBeGreaterThanOrEqual(95)
      console.log(`lock_timeout = 100: 55P03 after ${waited.toFixed(0)} ms`)
      // The same with statement_timeout: 57014.
      await other.query('SET lock_timeout = 0')
      await other.query('SET statement_timeout = 100')
      expect(await sqlState(other.query('SELECT 1'))).toBe('57014')

      // The slot is visible to the holder's own later reads, and survives its rollback.
      await holder.query('ROLLBACK')
      const slots = await other.query(`SELECT slot_name, slot_type, temporary FROM pg_replication_slots`)
      expect(slots.rows).toEqual([{ slot_name: 'held', slot_type: 'logical', temporary: false }])
    } finally {
      await Promise.all([holder.end(), walsender.end(), other.end()])
    }
    await server.close()
    await db.close()
    ;({ db, server } = await open(dir))
    expect((await db.query(`SELECT slot_name FROM pg_replication_slots`)).rows).toEqual([{ slot_name: 'held' }])
    await server.close()
    await db.close()
  })

  it('answers BEGIN and SET LOCAL without the backend until a statement needs it', async () => {
    const { db, server } = await open()
    const sql = postgres({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 1, onnotice: () => {} })
    const holder = client(server.port)
    await holder.connect()
    await sql`SELECT 1` // connected (postgres.js reads the array types first)
    try {
      await holder.query('BEGIN')
      await holder.query('SELECT 1')
      let reached = false
      // A transaction pool worker's opening (zero-cache's): none of it waits.
      const tx = sql.begin('ISOLATION LEVEL READ COMMITTED', async (tx) => {
        await tx`SET LOCAL statement_timeout = 0`
        await tx`SET LOCAL idle_in_transaction_session_timeout = 60000`
        reached = true
        return (await tx`SELECT 42 AS n`)[0].n
      })
      // reached turns true with the holder's transaction still open.
      while (!reached) await new Promise((r) => setImmediate(r))
      await holder.query('COMMIT')
      expect(await tx).toBe(42)
      // SET LOCAL's validation, and PostgreSQL's warning outside a block.
      const bad = sql.begin(async (tx) => {
        await tx`SET LOCAL lock_timeout = 'soon'`
      })
      expect(await sqlState(bad)).toBe('22023')
      expect((await sql`SHOW wal_level`)[0].wal_level).toBe('logical')
    } finally {
      await holder.end()
      await sql.end()
      await server.close()
      await db.close()
    }
  })
})

describe('an exported snapshot', () => {
  it('gives three parallel copies exactly the consistent point while a third session writes; the stream gives exactly the later commits', async () => {
    const { db, server } = await open()
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR TABLE t;
      INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
    const walsender = client(server.port, true)
    const writer = client(server.port)
    await Promise.all([walsender.connect(), writer.connect()])
    const copies = Array.from({ length: 3 }, () =>
      postgres({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 1, onnotice: () => {} }),
    )
    try {
      const slot = (await walsender.query('CREATE_REPLICATION_SLOT snap LOGICAL pgoutput')).rows[0]
      // Committed after the slot's creation, before any copy: in the copies, not in the stream.
      await writer.query(`INSERT INTO t VALUES (4, 'before the copies')`)
      let imported = 0
      let release!: () => void
      const allIn = new Promise<void>((r) => (release = r))
      const reads = copies.map((sql) =>
        sql.begin('ISOLATION LEVEL REPEATABLE READ READ ONLY', async (tx) => {
          await tx.unsafe(`SET TRANSACTION SNAPSHOT '${slot.snapshot_name}'`)
          if (++imported === copies.length) release()
          await allIn
          const rows = await tx`SELECT id FROM t ORDER BY id`
          await tx`SELECT 1`
          return rows.map((r) => r.id)
        }),
      )
      await allIn
      // A third session writes while the copies run: it waits for them.
      const writes = (async () => {
        await writer.query(`INSERT INTO t VALUES (5, 'after')`)
        await writer.query(`UPDATE t SET v = 'changed' WHERE id = 1`)
      })()
      expect(await Promise.all(reads)).toEqual([
        [1, 2, 3, 4],
        [1, 2, 3, 4],
        [1, 2, 3, 4],
      ])
      await writes
      // The copies are done and the data changed: the snapshot cannot be imported again.
      const late = copies[0].begin('ISOLATION LEVEL REPEATABLE READ', (tx) => tx.unsafe(`SET TRANSACTION SNAPSHOT '${slot.snapshot_name}'`))
      expect(await sqlState(late)).toBe('22023')
      expect(await sqlState(copies[0].begin((tx) => tx.unsafe(`SET TRANSACTION SNAPSHOT 'nope'`)))).toBe('0A000') // read committed
      expect(await sqlState(copies[0].begin('ISOLATION LEVEL SERIALIZABLE', (tx) => tx.unsafe(`SET TRANSACTION SNAPSHOT 'nope'`)))).toBe('22023')
      await walsender.end()

      // START_REPLICATION at the reported consistent point: only what came after the copies.
      const svc = new LogicalReplicationService(
        { host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' },
        { acknowledge: { auto: false, timeoutSeconds: 0 } },
      )
      const seen: string[] = []
      const done = new Promise<void>((resolve) => {
        svc.on('data', (_lsn: string, m: { tag: string; new?: { id: number; v: string } }) => {
          if (m.tag === 'insert' || m.tag === 'update') seen.push(`${m.tag} ${m.new!.id} ${m.new!.v}`)
          if (seen.length === 2) resolve()
        })
      })
      void svc.subscribe(new PgoutputPlugin({ protoVersion: 1, publicationNames: ['p'] }), 'snap', slot.consistent_point).catch(() => {})
      await done
      await svc.stop()
      expect(seen).toEqual(['insert 5 after', 'update 1 changed'])
    } finally {
      await writer.end()
      await Promise.all(copies.map((c) => c.end()))
      await server.close()
      await db.close()
    }
  })
  it('ends an importing transaction with a COMMIT the client prepared while it held the backend', async () => {
    // zero-cache's pooled connections (postgres.js) prepare COMMIT once, in an
    // ordinary transaction, and reuse it (Bind/Execute only) to end the
    // transaction that imported the snapshot. It must let the backend go.
    const { db, server } = await open()
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY)`)
    const walsender = client(server.port, true)
    const reader = client(server.port)
    const other = client(server.port)
    await Promise.all([walsender.connect(), reader.connect(), other.connect()])
    const commit = { name: 'commit_prepared', text: 'COMMIT' }
    try {
      await reader.query('BEGIN')
      await reader.query('SELECT 1')
      await reader.query(commit)
      const slot = (await walsender.query('CREATE_REPLICATION_SLOT prepared_commit LOGICAL pgoutput')).rows[0]
      await reader.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      await reader.query(`SET TRANSACTION SNAPSHOT '${slot.snapshot_name}'`)
      expect((await reader.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }])
      await reader.query(commit)
      // The group has ended: another session gets the backend without waiting out a bound.
      await other.query('SET lock_timeout = 5000')
      await other.query('INSERT INTO t VALUES (1)')
      expect((await reader.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 1 }])
    } finally {
      await Promise.all([walsender.end(), reader.end(), other.end()])
      await server.close()
      await db.close()
    }
  })
  it('keeps advisory locks per session: try_ forms, shared and exclusive, re-entrant counts, kept across ROLLBACK, released at disconnect; a wait ends at the release or lock_timeout', async () => {
    const { db, server } = await open()
    const [a, b, c] = [client(server.port), client(server.port), client(server.port)]
    await Promise.all([a.connect(), b.connect(), c.connect()])
    const one = async (cl: pg.Client, sql: string) => Object.values((await cl.query(sql)).rows[0])[0]
    try {
      await a.query('BEGIN')
      await a.query('SELECT pg_advisory_lock(1)')
      await a.query('ROLLBACK') // a session-level lock outlives the transaction
      expect(await one(a, 'SELECT pg_try_advisory_lock(1)')).toBe(true) // re-entrant: held twice now
      expect(await one(b, 'SELECT pg_try_advisory_lock(1)')).toBe(false)
      expect(await one(b, 'SELECT pg_try_advisory_lock_shared(1)')).toBe(false)
      expect(await one(b, 'SELECT pg_try_advisory_lock(0, 1)')).toBe(true) // the two-int4 key space is separate
      expect(await one(b, 'SELECT pg_try_advisory_lock_shared(2)')).toBe(true)
      expect(await one(c, 'SELECT pg_try_advisory_lock_shared(2)')).toBe(true) // shared with shared
      expect(await one(a, 'SELECT pg_try_advisory_lock(2)')).toBe(false) // exclusive with shared
      expect(await one(b, 'SELECT pg_advisory_unlock(1)')).toBe(false) // not b's
      expect(await one(b, 'SELECT pg_try_advisory_xact_lock(1)')).toBe(false)
      expect(await one(b, 'SELECT pg_try_advisory_xact_lock(3)')).toBe(true)
      // A waiting form inside a block cannot wait (b holds the backend): 55P03 at once.
      await b.query('BEGIN')
      expect(await sqlState(b.query('SELECT pg_advisory_xact_lock(1)'))).toBe('55P03')
      await b.query('ROLLBACK')
      // Outside a block it waits, bounded by lock_timeout...
      await c.query('SET lock_timeout = 100')
      const started = performance.now()
      expect(await sqlState(c.query('SELECT pg_advisory_lock(1)'))).toBe('55P03')
      expect(performance.now() - started).toBeGreaterThanOrEqual(95)
      await c.query('SET lock_timeout = 0')
      // ... and ends when the holder lets go (a holds it twice: one unlock is not enough).
      const waiting = b.query('SELECT pg_advisory_lock(1), 42 AS after')
      expect(await one(c, 'SELECT 1')).toBe(1) // others are not held up meanwhile
      expect(await one(a, 'SELECT pg_advisory_unlock(1)')).toBe(true)
      expect(await one(c, 'SELECT pg_try_advisory_lock_shared(1)')).toBe(false) // a holds it once more
      expect(await one(a, 'SELECT pg_advisory_unlock(1)')).toBe(true)
      expect((await waiting).rows[0].after).toBe(42)
      expect(await one(a, 'SELECT pg_try_advisory_lock(1)')).toBe(false) // b has it now
      // A session's end releases its locks.
      await b.end()
      expect(await one(a, 'SELECT pg_try_advisory_lock(1)')).toBe(true)
      expect(await one(c, 'SELECT pg_try_advisory_lock(0, 1)')).toBe(true)
      await a.query('SELECT pg_advisory_unlock_all()')
      expect(await one(c, 'SELECT pg_try_advisory_lock(1)')).toBe(true)
    } finally {
      await Promise.all([a.end(), b.end().catch(() => {}), c.end()])
      await server.close()
      await db.close()
    }
  })
})

describe('slot functions and backend signals in SQL', () => {
  it('create, advance and drop slots the walsender commands see; pg_terminate_backend(active_pid) ends the walsender; pg_backend_pid is the session pid', async () => {
    const { db, server } = await open()
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR TABLE t`)
    const sqlc = client(server.port)
    const walsender = client(server.port, true)
    await Promise.all([sqlc.connect(), walsender.connect()])
    const pidOf = (c: pg.Client) => (c as unknown as { processID: number }).processID
    try {
      // The pid a client got in BackendKeyData, on every connection.
      expect((await sqlc.query('SELECT pg_backend_pid() AS pid')).rows[0].pid).toBe(pidOf(sqlc))

      const created = (await sqlc.query(`SELECT * FROM pg_create_logical_replication_slot('by_sql', 'pgoutput')`)).rows[0]
      expect(created.slot_name).toBe('by_sql')
      expect(created.lsn).toMatch(/^[0-9A-F]+\/[0-9A-F]+$/)
      expect(await sqlState(sqlc.query(`SELECT pg_create_logical_replication_slot('by_sql', 'pgoutput')`))).toBe('42710')
      expect(await sqlState(sqlc.query(`SELECT pg_create_logical_replication_slot('by_sql2', 'test_decoding')`))).toBe('58P01')
      // The walsender's commands see the slot the SQL function made.
      expect(await sqlState(walsender.query(`CREATE_REPLICATION_SLOT by_sql LOGICAL pgoutput`))).toBe('42710')

      // Streaming from it: the slot is active for the walsender's pid.
      const conn = (walsender as unknown as { connection: NodeJS.EventEmitter }).connection
      const streaming = new Promise<void>((r) => conn.once('replicationStart', () => r()))
      // Its end comes as the error of the query that streams (FATAL 57P01).
      const walsenderEnd = sqlState(walsender.query(`START_REPLICATION SLOT by_sql LOGICAL 0/0 (proto_version '1', publication_names 'p')`))
      walsender.on('error', () => {}) // and then the closed socket
      await streaming
      const active = (await sqlc.query(`SELECT active, active_pid FROM pg_replication_slots WHERE slot_name = 'by_sql'`)).rows[0]
      expect(active).toEqual({ active: true, active_pid: pidOf(walsender) })
      expect(await sqlState(sqlc.query(`SELECT pg_drop_replication_slot('by_sql')`))).toBe('55006')
      expect(await sqlState(sqlc.query(`SELECT pg_replication_slot_advance('by_sql', pg_current_wal_lsn())`))).toBe('55006')

      // zero-cache's statement: the walsender session ends with 57P01, the slot goes inactive.
      const terminated = await sqlc.query(
        `SELECT pg_terminate_backend(active_pid) AS terminated, active_pid AS pid FROM pg_replication_slots WHERE slot_name = 'by_sql'`,
      )
      expect(terminated.rows).toEqual([{ terminated: true, pid: pidOf(walsender) }])
      expect(await walsenderEnd).toBe('57P01')
      expect((await sqlc.query(`SELECT active, active_pid FROM pg_replication_slots WHERE slot_name = 'by_sql'`)).rows).toEqual([
        { active: false, active_pid: null },
      ])
      // A pid that is no session: false and PostgreSQL's warning.
      const notices: string[] = []
      sqlc.on('notice', (n) => notices.push(n.message ?? ''))
      expect((await sqlc.query('SELECT pg_terminate_backend(999999) AS t')).rows).toEqual([{ t: false }])
      expect(notices).toEqual(['PID 999999 is not a PostgreSQL backend process'])

      // Advance: confirmed_flush_lsn moves to the current position, never back.
      await sqlc.query('INSERT INTO t VALUES (1)')
      const now = (await sqlc.query('SELECT pg_current_wal_lsn()::text AS lsn')).rows[0].lsn
      const advanced = (await sqlc.query(`SELECT * FROM pg_replication_slot_advance('by_sql', pg_current_wal_lsn())`)).rows[0]
      expect(advanced).toEqual({ slot_name: 'by_sql', end_lsn: now })
      expect((await sqlc.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots`)).rows).toEqual([{ c: now }])
      expect(await sqlState(sqlc.query(`SELECT pg_replication_slot_advance('by_sql', '0/1')`))).toBe('22023')

      expect((await sqlc.query(`SELECT pg_drop_replication_slot('by_sql')`)).rows).toEqual([{ pg_drop_replication_slot: '' }])
      expect((await sqlc.query(`SELECT count(*)::int AS n FROM pg_replication_slots`)).rows).toEqual([{ n: 0 }])
      expect(await sqlState(sqlc.query(`SELECT pg_drop_replication_slot('by_sql')`))).toBe('42704')
    } finally {
      await Promise.all([sqlc.end(), walsender.end().catch(() => {})])
      await server.close()
      await db.close()
    }
  })

  it('pg_cancel_backend ends a session\'s wait for a lock with 57014; idle_in_transaction_session_timeout ends its session with 25P03', async () => {
    const { db, server } = await open()
    const [holder, waiter, canceller] = [client(server.port), client(server.port), client(server.port)]
    await Promise.all([holder.connect(), waiter.connect(), canceller.connect()])
    const pidOf = (c: pg.Client) => (c as unknown as { processID: number }).processID
    try {
      await holder.query('SELECT pg_advisory_lock(1)')
      const waiting = sqlState(waiter.query('SELECT pg_advisory_lock(1)'))
      // The waiter waits for the lock, not for the backend: the canceller's SQL runs.
      expect((await canceller.query(`SELECT pg_cancel_backend(${pidOf(waiter)}) AS c`)).rows).toEqual([{ c: true }])
      expect(await waiting).toBe('57014')
      await holder.query('SELECT pg_advisory_unlock(1)')
      expect((await waiter.query('SELECT pg_try_advisory_lock(1) AS got')).rows).toEqual([{ got: true }])

      // PostgreSQL ends a session idle in a transaction past the timeout (FATAL 25P03).
      const ended = sessionEnd(holder)
      await holder.query('SET idle_in_transaction_session_timeout = 100')
      expect((await holder.query('SHOW idle_in_transaction_session_timeout')).rows).toEqual([{ idle_in_transaction_session_timeout: '100ms' }])
      await holder.query('BEGIN')
      await holder.query('SELECT 1')
      expect(await ended).toBe('25P03')
      // It let the backend go: another session runs.
      expect((await waiter.query('SELECT 4 AS n')).rows).toEqual([{ n: 4 }])
    } finally {
      await Promise.all([holder.end().catch(() => {}), waiter.end(), canceller.end()])
      await server.close()
      await db.close()
    }
  })

  it('session-only timeouts set while holding the backend end only their session; PGlite never has them', async () => {
    // PGlite's backend arms these timers between calls and its FATAL leaves it
    // spinning (backend/idle-timeouts.ts): each form of setting them must
    // reach only the session's own timer.
    const { db, server } = await open()
    const other = client(server.port)
    await other.connect()
    const forms: Array<[string, string[], string]> = [
      // SET inside a block, sent to the backend with the statement that holds it
      ['in a block', ['BEGIN', 'SELECT 1', 'SET idle_in_transaction_session_timeout = 100'], '25P03'],
      // set_config() in a query, then a block
      ['set_config', [`SELECT set_config('idle_in_transaction_session_timeout', '100', false)`, 'BEGIN', 'SELECT 1'], '25P03'],
      // idle outside a transaction
      ['idle session', [`SELECT set_config('idle_session_timeout', '100', false)`], '57P05'],
      // SET LOCAL sent with the statements that hold the backend
      ['SET LOCAL', ['BEGIN', `SELECT 1; SET LOCAL transaction_timeout = 150`], '25P04'],
    ]
    try {
      for (const [what, statements, code] of forms) {
        const c = client(server.port)
        await c.connect()
        const ended = sessionEnd(c)
        for (const sql of statements) await c.query(sql).catch(() => {})
        expect(await ended, what).toBe(code)
        // PGlite answers, and has none of them.
        const set = await other.query(
          `SELECT name, setting FROM pg_settings WHERE name IN ('idle_in_transaction_session_timeout', 'idle_session_timeout', 'transaction_timeout') AND setting <> '0'`,
        )
        expect(set.rows, what).toEqual([])
      }
      // Set and then aborted in one message: PostgreSQL's abort undoes the SET,
      // the session goes on (25P02 until ROLLBACK) and the backend is free.
      const c = client(server.port)
      await c.connect()
      await c.query('BEGIN')
      await c.query('SAVEPOINT a')
      expect(await sqlState(c.query(`SET idle_in_transaction_session_timeout = 100; SAVEPOINT b; SELECT 1/0`))).toBe('22012')
      expect((await other.query(`SELECT count(*)::int AS n FROM pg_settings WHERE name = 'idle_in_transaction_session_timeout' AND setting <> '0'`)).rows).toEqual([{ n: 0 }])
      expect(await sqlState(c.query('SELECT 1'))).toBe('25P02')
      expect(await sqlState(c.query('ROLLBACK TO SAVEPOINT a'))).toBe('3B001')
      await c.query('ROLLBACK')
      expect((await c.query('SHOW idle_in_transaction_session_timeout')).rows).toEqual([{ idle_in_transaction_session_timeout: '0' }])
      await c.end()
      expect((await db.query(`SELECT 5 AS n`)).rows).toEqual([{ n: 5 }])
    } finally {
      await other.end()
      await server.close()
      await db.close()
    }
  })
})

describe('connection limits', () => {
  it('max_connections and max_wal_senders: FATAL 53300 past them, as PostgreSQL; a freed slot is usable again', async () => {
    const { db, server } = await open()
    const ordinary = Array.from({ length: 100 }, () => client(server.port))
    const walsenders = Array.from({ length: 10 }, () => client(server.port, true))
    try {
      await Promise.all([...ordinary, ...walsenders].map((c) => c.connect()))
      const extra = client(server.port)
      expect(await sqlState(extra.connect())).toBe('53300')
      const extraWalsender = client(server.port, true)
      const refused = await extraWalsender.connect().then(
        () => null,
        (e: { code: string; message: string }) => e,
      )
      expect(refused).toMatchObject({ code: '53300', message: 'number of requested standby connections exceeds max_wal_senders (currently 10)' })
      // One leaves: the next one gets in.
      await ordinary.pop()!.end()
      const next = client(server.port)
      await next.connect()
      expect((await next.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
      ordinary.push(next)
    } finally {
      await Promise.all([...ordinary, ...walsenders].map((c) => c.end().catch(() => {})))
      await server.close()
      await db.close()
    }
  })
})
