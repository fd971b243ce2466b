// zero-cache 1.9.0, unmodified, on tabgres: its upstream, CVR and change
// databases are three databases of one `npm run serve` (persisted in a
// directory). Initial sync of the common types and a composite key, then
// INSERT, UPDATE, DELETE, TRUNCATE and ALTER TABLE ... ADD COLUMN reach its
// SQLite replica; a restart of zero-cache resumes from its slot without a
// new initial sync.
//
// Twice: zero-cache as its CLI runs it (a process per worker, the native
// SQLite binding), and as the tab runs it (one process, SINGLE_PROCESS=1,
// the tab's SQLite in WebAssembly with its files kept in an image file).
//
// The replica is compared with the upstream through each type's SQLite form
// in zero-cache (REAL milliseconds for timestamptz and date, 0/1 for bool,
// JSON text for jsonb and arrays), computed on the upstream by SQL.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServe, type ServeProcess } from '../../src/node/serve-process'
import { node22, startZeroCache, type ZeroCache } from '../../src/node/zero-cache'
import { freePort } from '../support/free-port'
import { ReplicaReader, type SqliteValue } from '../support/zero-replica'
import { inOneProcess, replicaOf } from '../support/zero-wasm'

const runtime = node22()
const APP = 'zt'

/** Each replicated table: its upstream projection to zero-cache's SQLite forms, and the replica's columns. */
const TABLES: Record<string, { upstream: string; replica: string }> = {
  kinds: {
    upstream: `SELECT id::text, t, i8::text, num::float8::text AS num, b::int::text AS b,
      (extract(epoch FROM ts) * 1000)::float8::text AS ts, (extract(epoch FROM d) * 1000)::float8::text AS d,
      u::text, j::text, array_to_json(ia)::text AS ia, array_to_json(ta)::text AS ta %extra% FROM kinds ORDER BY id`,
    replica: `SELECT id, t, i8, num, b, ts, d, u, j, ia, ta %extra% FROM kinds ORDER BY id`,
  },
  pairs: {
    upstream: `SELECT a::text, b, v FROM pairs ORDER BY a, b`,
    replica: `SELECT a, b, v FROM pairs ORDER BY a, b`,
  },
}

function text(v: SqliteValue): string | null {
  if (v === null) return null
  if (typeof v === 'object') return v.bigint
  return String(v)
}

describe.skipIf(!runtime.path && !(process.platform === 'linux' && process.arch === 'x64')).each(['native SQLite, a process per worker', 'the tab’s SQLite, one process'])('zero-cache on npm run serve (%s)', (mode) => {
  const wasm = mode.startsWith('the tab')
  const dir = mkdtempSync(join(tmpdir(), 'tabgres-zero-'))
  const replicaFile = join(dir, 'replica.db')
  let serve: ServeProcess
  let upstream: pg.Client
  let zero: ZeroCache | null = null
  let replica: ReplicaReader | null = null
  let extraColumn = false
  /** Resolvers woken by each transaction zero-cache commits to its replica. */
  const onCommit = new Set<() => void>()
  const log: string[] = []

  /** Settles when zero-cache says its change source streams from the slot (each start). */
  let streaming: Promise<void> = Promise.resolve()
  const start = async () => {
    let streamed!: () => void
    streaming = new Promise<void>((r) => (streamed = r))
    zero = startZeroCache({
      upstream: serve.url('postgres'),
      cvr: serve.url('zcvr'),
      change: serve.url('zchange'),
      replicaFile,
      port: await freePort(),
      changeStreamerPort: await freePort(),
      appId: APP,
      logLevel: 'debug',
      ...(wasm && inOneProcess(join(dir, 'replica.image'))),
      onLine: (line) => {
        log.push(line)
        if (log.length > 200) log.shift()
        if (/Committed tx@/.test(line)) for (const wake of onCommit) wake()
        if (/started replication stream@/.test(line)) streamed()
      },
    })
    const exited = zero.exited.then((c) => Promise.reject(new Error(`zero-cache exited ${c}:\n${log.join('\n')}`)))
    // Ready does not wait for the change source: in one process it may start streaming just after.
    await Promise.race([Promise.all([zero.ready, streaming]), exited])
    replica = wasm ? replicaOf(zero!) : new ReplicaReader(replicaFile)
  }

  const stop = async () => {
    await replica?.close()
    replica = null
    const code = await zero?.stop()
    zero = null
    return code
  }

  const snapshotOf = async () => {
    const extra = extraColumn ? ', extra' : ''
    const up: Record<string, unknown[]> = {}
    const rep: Record<string, unknown[]> = {}
    for (const [name, t] of Object.entries(TABLES)) {
      const ex = name === 'kinds' ? extra : ''
      up[name] = (await upstream.query({ text: t.upstream.replace('%extra%', ex), rowMode: 'array' })).rows
      // Until zero-cache has applied an ALTER TABLE, its replica lacks the new
      // column: the error stands in for the rows, so the snapshots differ and
      // the wait goes on to the next replica commit.
      rep[name] = await replica!.query(t.replica.replace('%extra%', ex)).then(
        (rows) => rows.map((r) => Object.values(r).map(text)),
        (e: Error) => [`replica: ${e.message}`],
      )
    }
    return { up, rep }
  }

  /** Waits, one replica commit at a time, until the replica equals the upstream (bounded). */
  const converged = async (what: string) => {
    const deadline = performance.now() + 60_000
    for (;;) {
      let wake!: () => void
      const committed = new Promise<void>((r) => (wake = r))
      onCommit.add(wake)
      try {
        const { up, rep } = await snapshotOf()
        if (JSON.stringify(up) === JSON.stringify(rep)) return
        const left = deadline - performance.now()
        if (left <= 0) {
          expect(rep, `replica after ${what}`).toEqual(up)
          return
        }
        let timer!: ReturnType<typeof setTimeout>
        await Promise.race([committed, new Promise<void>((r) => (timer = setTimeout(r, left)))])
        clearTimeout(timer)
      } finally {
        onCommit.delete(wake)
      }
    }
  }

  beforeAll(async () => {
    serve = startServe({ data: join(dir, 'pg'), databases: ['postgres', 'zcvr', 'zchange'] })
    await serve.ready
    upstream = new pg.Client({ connectionString: serve.url('postgres') })
    await upstream.connect()
    await upstream.query(`
      CREATE TABLE kinds (id int4 PRIMARY KEY, t text, i8 int8, num numeric, b bool, ts timestamptz, d date,
        u uuid, j jsonb, ia int4[], ta text[]);
      CREATE TABLE pairs (a int8, b text, v text, PRIMARY KEY (a, b));
      INSERT INTO kinds VALUES
        (1, 'one', 9007199254740993, 1.5, true, '2024-01-02 03:04:05.678+00', '2024-02-29', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
         '{"x": 1, "y": [true, null]}', '{1,2,3}', '{"a","b c"}'),
        (2, 'two', -42, -0.25, false, '1999-12-31 23:59:59.999+00', '1970-01-01', NULL, '[]', '{}', '{}'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
      INSERT INTO pairs VALUES (1, 'x', 'first'), (1, 'y', 'second'), (2, 'x', 'third');`)
  }, 120_000)

  afterAll(async () => {
    await stop().catch(() => {})
    await upstream?.end().catch(() => {})
    if (serve) expect(await serve.stop()).toBe(0)
    rmSync(dir, { recursive: true, force: true })
  }, 120_000)

  it('completes initial sync: every type and the composite key as upstream', async () => {
    await start()
    const { up, rep } = await snapshotOf()
    expect(up.kinds).toHaveLength(3)
    expect(rep).toEqual(up)
    // zero-cache created its slot on tabgres and is streaming from it.
    const slots = await upstream.query(`SELECT slot_name, plugin, active FROM pg_replication_slots`)
    expect(slots.rows).toEqual([{ slot_name: `${APP}_0_a`, plugin: 'pgoutput', active: true }])
  }, 240_000)

  it('streams INSERT, UPDATE and DELETE, in one transaction and alone', async () => {
    await upstream.query(`INSERT INTO kinds (id, t, i8, b, ia) VALUES (4, 'four', 4, true, '{4}')`)
    await upstream.query(`BEGIN; UPDATE kinds SET t = 'ONE', j = '{"x": 2}' WHERE id = 1;
      DELETE FROM kinds WHERE id = 2; UPDATE pairs SET v = 'moved', a = 3 WHERE a = 2 AND b = 'x'; COMMIT`)
    await upstream.query(`DELETE FROM pairs WHERE a = 1 AND b = 'y'`)
    await converged('insert, update, delete')
  }, 120_000)

  it('streams TRUNCATE and ALTER TABLE ... ADD COLUMN', async () => {
    await upstream.query(`TRUNCATE pairs`)
    await upstream.query(`INSERT INTO pairs VALUES (7, 'after truncate', 'v')`)
    await converged('truncate')
    await upstream.query(`ALTER TABLE kinds ADD COLUMN extra text DEFAULT 'dflt'`)
    extraColumn = true
    await upstream.query(`INSERT INTO kinds (id, t, extra) VALUES (5, 'five', 'given')`)
    await converged('add column')
  }, 120_000)

  it('resumes after a restart without a new initial sync', async () => {
    const version = async () => (await replica!.query(`SELECT "replicaVersion" FROM "_zero.replicationConfig"`))[0].replicaVersion
    const before = await version()
    expect(await stop()).toBe(0)
    // Committed while zero-cache is down: it arrives from the slot on restart.
    await upstream.query(`INSERT INTO kinds (id, t) VALUES (6, 'while down'); UPDATE pairs SET v = 'changed while down'`)
    log.length = 0
    await start()
    expect(await version()).toBe(before)
    expect(log.some((l) => /Created replication slot/.test(l))).toBe(false)
    await converged('restart')
    const slots = await upstream.query(`SELECT slot_name FROM pg_replication_slots`)
    expect(slots.rows).toEqual([{ slot_name: `${APP}_0_a` }])
  }, 240_000)
})
