// The wire protocol with real clients we did not write: psql, pg_recvlogical
// (Debian's PostgreSQL 15 tools), postgres.js, node-postgres and
// pg-logical-replication, against the engine on TCP (127.0.0.1, a free port).

import { PGlite } from '@electric-sql/pglite'
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import pg from 'pg'
import postgres from 'postgres'
import { LogicalReplicationService, PgoutputPlugin } from 'pg-logical-replication'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { splitRecvlogicalFile } from '../support/recvlogical'
import { listen, type TcpServer } from '../../src/node/server'
import { installChangeTracking } from '../../src/engine/install'

const run = promisify(execFile)
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'tabgres-wire-'))
  dirs.push(d)
  return d
}

async function psql(port: number, args: string[], conn = ''): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const { stdout, stderr } = await run(
      join(PG_BIN, 'psql'),
      [`host=127.0.0.1 port=${port} dbname=postgres user=postgres ${conn}`, '-X', '-v', 'ON_ERROR_STOP=1', ...args],
      { env: { ...process.env, PGCONNECT_TIMEOUT: '10' }, timeout: 30_000 },
    )
    return { stdout, stderr, code: 0 }
  } catch (e) {
    const err = e as { stdout: string; stderr: string; code: number }
    return { stdout: err.stdout, stderr: err.stderr, code: err.code }
  }
}

describe('wire protocol on TCP', () => {
  let db: PGlite
  let server: TcpServer

  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(`CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2), at timestamptz, tags int[]);
                   CREATE PUBLICATION pub FOR TABLE items`)
    server = await listen(db)
  })
  afterAll(async () => {
    await server.close()
    await db.close()
  })

  it('psql: IDENTIFY_SYSTEM on a replication connection, queries, and errors with their SQLSTATE', async () => {
    const ident = await psql(server.port, ['-A', '-t', '-c', 'IDENTIFY_SYSTEM'], 'replication=database')
    expect(ident.code).toBe(0)
    expect(ident.stdout.trim()).toMatch(/^\d+\|1\|[0-9A-F]+\/[0-9A-F]+\|postgres$/)

    const q = await psql(server.port, ['-A', '-t', '-c', "SELECT 1 + 1, 'ok'::text"])
    expect(q.stdout.trim()).toBe('2|ok')

    const err = await psql(server.port, ['-c', '\\set VERBOSITY verbose', '-c', 'SELECT * FROM missing_table'])
    expect(err.code).not.toBe(0)
    expect(err.stderr).toContain('ERROR:  42P01: relation "missing_table" does not exist')
  })

  it('pg_recvlogical: create a slot, stream a workload to a file that decodes to exactly the committed changes, drop the slot', async () => {
    const file = join(tempDir(), 'out.bin')
    const conn = [`--host=127.0.0.1`, `--port=${server.port}`, '--dbname=postgres', '--username=postgres']
    await run(join(PG_BIN, 'pg_recvlogical'), [...conn, '--slot=recv', '--create-slot', '--plugin=pgoutput'])
    await db.exec(`INSERT INTO items VALUES (1, 'one', 1.50, '2024-01-02 03:04:05+00', '{1,2}')`)
    await db.exec(`BEGIN; INSERT INTO items VALUES (2, 'two', 2.00, NULL, NULL); UPDATE items SET name = 'uno' WHERE id = 1; COMMIT`)
    await db.exec(`BEGIN; INSERT INTO items VALUES (3, 'rolled back', 0, NULL, NULL); ROLLBACK`)
    await db.exec(`DELETE FROM items WHERE id = 2`)
    const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
    await run(
      join(PG_BIN, 'pg_recvlogical'),
      [...conn, '--slot=recv', '--start', '-o', 'proto_version=1', '-o', 'publication_names=pub', `--endpos=${lsn}`, '-f', file, '--no-loop'],
      { timeout: 60_000 },
    )
    const msgs = splitRecvlogicalFile(new Uint8Array(readFileSync(file)))
    const summary = msgs.map((m) =>
      m.tag === 'I' || m.tag === 'U'
        ? `${m.tag}:${m.new.columns.map((c) => (c.kind === 't' ? c.value : c.kind)).join(',')}`
        : m.tag === 'D'
          ? `D:${m.old.columns.map((c) => (c.kind === 't' ? c.value : c.kind)).join(',')}`
          : m.tag,
    )
    expect(summary).toEqual([
      'B', 'R', 'I:1,one,1.50,2024-01-02 03:04:05+00,{1,2}', 'C',
      'B', 'I:2,two,2.00,n,n', 'U:1,uno,1.50,2024-01-02 03:04:05+00,{1,2}', 'C',
      'B', 'D:2,n,n,n,n', 'C',
    ])
    await run(join(PG_BIN, 'pg_recvlogical'), [...conn, '--slot=recv', '--drop-slot'])
    expect((await db.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = 'recv'`)).rows).toEqual([])
  })

  it('postgres.js: queries, and subscribe() sees inserts, updates and deletes with typed values', async () => {
    const sql = postgres({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', max: 2, onnotice: () => {} })
    try {
      const [{ n }] = await sql`SELECT ${41}::int + 1 AS n`
      expect(n).toBe(42)
      // subscribe() streams the publication named 'alltables', which the user creates.
      await sql`CREATE PUBLICATION alltables FOR ALL TABLES`
      const seen: { command: string; row: Record<string, unknown> | null }[] = []
      let wake: () => void = () => {}
      const { unsubscribe } = await sql.subscribe(
        '*:items',
        (row, info) => {
          seen.push({ command: info.command, row: row ? { ...row } : null })
          wake()
        },
        () => {},
      )
      const until = (n: number) => new Promise<void>((r) => (seen.length >= n ? r() : (wake = () => seen.length >= n && r())))
      await sql`INSERT INTO items VALUES (10, 'ten', 10.25, '2024-05-06 07:08:09+00', '{3,4}')`
      await sql`UPDATE items SET name = 'TEN' WHERE id = 10`
      await sql`DELETE FROM items WHERE id = 10`
      await until(3)
      expect(seen.map((s) => s.command)).toEqual(['insert', 'update', 'delete'])
      expect(seen[0].row).toMatchObject({ id: 10, name: 'ten', price: '10.25', tags: [3, 4] })
      expect(seen[0].row!.at).toBeInstanceOf(Date)
      expect((seen[0].row!.at as Date).toISOString()).toBe('2024-05-06T07:08:09.000Z')
      expect(seen[1].row).toMatchObject({ id: 10, name: 'TEN' })
      expect(seen[2].row).toMatchObject({ id: 10 })
      await unsubscribe()
    } finally {
      await sql.end()
    }
  })

  it('sessions interleave transactions while a replication session streams: nothing uncommitted leaks', async () => {
    const clients = await Promise.all(
      [0, 1, 2].map(async () => {
        const c = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' })
        await c.connect()
        return c
      }),
    )
    const received: { tag: string; new?: { id: number } }[] = []
    const rec = new LogicalReplicationService(
      { host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres' },
      { acknowledge: { auto: true, timeoutSeconds: 0 } },
    )
    const plugin = new PgoutputPlugin({ protoVersion: 1, publicationNames: ['pub'] })
    const committedIds: number[] = []
    try {
      await db.exec('CREATE TABLE IF NOT EXISTS _slot_probe (x int)')
      const c0 = clients[0]
      await c0.query(`SELECT 1`)
      rec.on('data', (_lsn: string, m: { tag: string; new?: { id: number } }) => void received.push(m))
      const slotCreated = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', replication: 'database' } as pg.ClientConfig)
      await slotCreated.connect()
      await slotCreated.query('CREATE_REPLICATION_SLOT conc LOGICAL pgoutput')
      await slotCreated.end()
      const subscribed = rec.subscribe(plugin, 'conc')
      subscribed.catch(() => {})
      // Client 0 opens a transaction and writes; the others must not see it.
      await c0.query('BEGIN')
      await c0.query(`INSERT INTO items VALUES (100, 'uncommitted yet', 1, NULL, NULL)`)
      const other = clients[1].query(`SELECT count(*)::int AS n FROM items WHERE id = 100`)
      // Client 1 waits for client 0's transaction to end; meanwhile client 2 queues too.
      const third = clients[2].query(`INSERT INTO items VALUES (101, 'after', 1, NULL, NULL)`)
      await c0.query(`INSERT INTO items VALUES (102, 'also in tx', 1, NULL, NULL)`)
      await c0.query('ROLLBACK')
      expect((await other).rows).toEqual([{ n: 0 }])
      await third
      committedIds.push(101)
      await c0.query('BEGIN')
      await c0.query(`INSERT INTO items VALUES (103, 'committed', 1, NULL, NULL)`)
      await c0.query('COMMIT')
      committedIds.push(103)
      // Wait for both commits on the stream (events, no timers).
      await new Promise<void>((resolve) => {
        const check = () => {
          if (received.filter((m) => m.tag === 'commit').length >= 2) resolve()
        }
        rec.on('data', check)
        check()
      })
      const ids = received.filter((m) => m.tag === 'insert').map((m) => m.new!.id)
      expect(ids).toEqual(committedIds)
    } finally {
      await rec.stop().catch(() => {})
      for (const c of clients) await c.end()
    }
  })
})

describe('pg-logical-replication across a server restart', () => {
  it('receives, acknowledges, and resumes after a restart without loss or repeats', async () => {
    const dir = tempDir()
    let db = new PGlite(dir)
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR TABLE t`)
    let server = await listen(db)
    const admin = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', replication: 'database' } as pg.ClientConfig)
    await admin.connect()
    await admin.query('CREATE_REPLICATION_SLOT plr LOGICAL pgoutput')
    await admin.end()

    const seen: number[] = []
    const consume = async (port: number, want: number) => {
      const svc = new LogicalReplicationService(
        { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' },
        { acknowledge: { auto: false, timeoutSeconds: 0 } },
      )
      let resolve!: () => void
      const done = new Promise<void>((r) => (resolve = r))
      svc.on('data', async (lsn: string, m: { tag: string; new?: { id: number } }) => {
        if (m.tag === 'insert') seen.push(m.new!.id)
        if (m.tag === 'commit') {
          await svc.acknowledge(lsn)
          if (seen.length >= want) resolve()
        }
      })
      svc.subscribe(new PgoutputPlugin({ protoVersion: 1, publicationNames: ['p'] }), 'plr').catch(() => {})
      await done
      await svc.stop()
    }
    for (let i = 1; i <= 5; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    await consume(server.port, 5)
    await server.close()
    await db.close()

    db = new PGlite(dir)
    await installChangeTracking(db, { retention: 'discard' })
    server = await listen(db)
    for (let i = 6; i <= 8; i++) await db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    await consume(server.port, 8)
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    await server.close()
    await db.close()
  })
})

describe('a server stopping while a consumer acknowledges', () => {
  it('an acknowledgement still in flight when close() starts reaches the slot, as at a walsender shutdown', async () => {
    const dir = tempDir()
    let db = new PGlite(dir)
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR TABLE t`)
    const server = await listen(db)
    const rep = new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', replication: 'database' } as pg.ClientConfig)
    await rep.connect()
    await rep.query('CREATE_REPLICATION_SLOT inflight LOGICAL pgoutput')
    for (let i = 1; i <= 3; i++) await db.query('INSERT INTO t VALUES ($1)', [i])
    const conn = (rep as unknown as { connection: NodeJS.EventEmitter & { sendCopyFromChunk(b: Buffer): void } }).connection
    const commits: Buffer[] = []
    const third = new Promise<void>((resolve) =>
      conn.on('copyData', ({ chunk }: { chunk: Buffer }) => {
        // XLogData carrying a pgoutput Commit: its end LSN at offset 25 + 1 + 1 + 8.
        if (chunk[0] === 0x77 && chunk[25] === 0x43) commits.push(chunk.subarray(25 + 10, 25 + 18))
        if (commits.length === 3) resolve()
      }),
    )
    rep.query(`START_REPLICATION SLOT inflight LOGICAL 0/0 (proto_version '1', publication_names 'p')`).catch(() => {})
    rep.on('error', () => {})
    await third
    // The standby status update goes to the socket and the server is told to
    // stop in the same turn of the event loop: its session has not read the
    // update yet. (This client never answers a keepalive.)
    const ack = Buffer.alloc(34)
    ack[0] = 0x72
    for (const at of [1, 9, 17]) commits[2].copy(ack, at)
    conn.sendCopyFromChunk(ack)
    await server.close()
    await rep.end().catch(() => {})
    await db.close()

    db = new PGlite(dir)
    await installChangeTracking(db, { retention: 'discard' })
    const slot = await db.query<{ c: string }>(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots`)
    const end = commits[2].readBigUInt64BE(0)
    expect(slot.rows).toEqual([{ c: `${(end >> 32n).toString(16).toUpperCase()}/${(end & 0xffffffffn).toString(16).toUpperCase()}` }])
    await db.close()
  })
})

// psql's \copy and COPY FROM STDIN through the same session.
describe('COPY', () => {
  it('COPY FROM STDIN and COPY TO STDOUT work through psql', async () => {
    const db = new PGlite()
    await installChangeTracking(db)
    await db.exec('CREATE TABLE c (id int, v text)')
    const server = await listen(db)
    try {
      const child = spawn(join(PG_BIN, 'psql'), [`host=127.0.0.1 port=${server.port} dbname=postgres user=postgres`, '-X', '-v', 'ON_ERROR_STOP=1', '-c', 'COPY c FROM STDIN'])
      child.stdin.end('1\tone\n2\ttwo\n')
      const code = await new Promise<number>((r) => child.on('close', (c) => r(c ?? -1)))
      expect(code).toBe(0)
      const out = await psql(server.port, ['-c', 'COPY c TO STDOUT'])
      expect(out.stdout).toBe('1\tone\n2\ttwo\n')
    } finally {
      await server.close()
      await db.close()
    }
  })
})

describe('sessions that end badly, and passwords', () => {
  let db: PGlite
  let server: TcpServer
  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec('CREATE TABLE k (id int PRIMARY KEY)')
    server = await listen(db, { password: 's3cret' })
  })
  afterAll(async () => {
    await server.close()
    await db.close()
  })
  const client = (password = 's3cret') => new pg.Client({ host: '127.0.0.1', port: server.port, user: 'postgres', database: 'postgres', password })

  it('SCRAM-SHA-256 by default with a password; a wrong one fails with 28P01', async () => {
    const ok = client()
    await ok.connect()
    expect((await ok.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
    await ok.end()
    const bad = client('wrong')
    const err = await bad.connect().catch((e) => e)
    expect(err).toMatchObject({ code: '28P01' })
  })

  it('a connection dropped inside a transaction is rolled back and frees the database', async () => {
    const a = client()
    a.on('error', () => {}) // its socket is destroyed below, on purpose
    await a.connect()
    await a.query('BEGIN')
    await a.query('INSERT INTO k VALUES (1)')
    const b = client()
    await b.connect()
    const waiting = b.query('SELECT count(*)::int AS n FROM k')
    // The socket goes away without Terminate.
    ;(a as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
    expect((await waiting).rows).toEqual([{ n: 0 }])
    await b.end()
  })

  it('a malformed message gets a FATAL 08P01 and a closed connection; the database stays usable', async () => {
    const { connect } = await import('node:net')
    const sock = connect(server.port, '127.0.0.1')
    await new Promise<void>((r) => sock.once('connect', () => r()))
    const got: Buffer[] = []
    const closed = new Promise<void>((r) => sock.once('close', () => r()))
    sock.on('data', (d) => got.push(d))
    // A length field of 2 cannot be: the start-up packet is at least 8 bytes.
    sock.write(Buffer.from([0, 0, 0, 2, 0, 3, 0, 0]))
    await closed
    const text = Buffer.concat(got).toString('latin1')
    expect(text[0]).toBe('E')
    expect(text).toContain('C08P01')
    const c = client()
    await c.connect()
    expect((await c.query('SELECT 2 AS two')).rows).toEqual([{ two: 2 }])
    await c.end()
  })
})
