// PostgreSQL's own subscriber replicating from tabgres, tried as a new user
// would: Debian's PostgreSQL 15 runs CREATE SUBSCRIPTION against the engine
// on TCP. Its apply worker asks for proto_version 3 (the publisher reports a
// server version >= 15); its table-sync workers create temporary slots with
// USE_SNAPSHOT inside a transaction on the replication connection and COPY
// each table from there. The subscriber must end equal to the publisher after
// the initial copy, after inserts, updates, deletes and truncates, and after
// ALTER SUBSCRIPTION ... REFRESH PUBLICATION picks up a new table.

import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installChangeTracking } from '../../src/engine/install'
import { listen, type TcpServer } from '../../src/node/server'
import { freePort } from '../support/free-port'
import { startPg15, type Pg15 } from '../support/pg15'

/** How long a subscriber may take to catch up before the test says where it stands. */
const CATCH_UP_MS = 60_000

const TABLES = {
  t: 'id int PRIMARY KEY, v text',
  u: 'a int PRIMARY KEY, b jsonb, c numeric(12,3), d timestamptz, e bytea, f int[], g text',
  w: 'k text PRIMARY KEY, n bigint',
}

describe('a PostgreSQL 15 subscriber (CREATE SUBSCRIPTION) replicating from tabgres', () => {
  let db: PGlite
  let server: TcpServer
  let sub: Pg15
  const clients: pg.Client[] = []

  async function connect(url: string): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: url })
    await c.connect()
    clients.push(c)
    return c
  }

  /** Every row of a table as text, in key order: the same rendering on both sides. */
  async function rows(c: pg.Client | PGlite, table: string): Promise<string[]> {
    const sql = `SELECT x::text AS r FROM ${table} x ORDER BY 1`
    const r = c instanceof PGlite ? await c.query<{ r: string }>(sql) : await c.query<{ r: string }>(sql)
    return r.rows.map((x) => x.r)
  }

  /**
   * Waits until the subscriber's table equals the publisher's, polling the
   * subscriber (the event is its apply worker committing), with a limit; on
   * the limit it fails showing both sides and the subscription's state.
   */
  async function caughtUp(c: pg.Client, table: string): Promise<void> {
    const deadline = Date.now() + CATCH_UP_MS
    for (;;) {
      const want = await rows(db, table)
      const got = await rows(c, table)
      if (JSON.stringify(got) === JSON.stringify(want)) return
      if (Date.now() > deadline) {
        const state = await c.query(`SELECT subname, subenabled, srrelid::regclass::text AS rel, srsubstate
                                       FROM pg_subscription LEFT JOIN pg_subscription_rel ON srsubid = pg_subscription.oid`)
        expect({ table, got, state: state.rows }).toEqual({ table, got: want, state: state.rows })
      }
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  /** Waits until every table of the subscriber's subscriptions is ready ('r': its sync worker is done and has dropped its slot). */
  async function ready(c: pg.Client): Promise<void> {
    const deadline = Date.now() + CATCH_UP_MS
    for (;;) {
      const r = await c.query(`SELECT srrelid::regclass::text AS rel, srsubstate FROM pg_subscription_rel WHERE srsubstate <> 'r'`)
      if (r.rows.length === 0) return
      expect(Date.now() < deadline, `tables not ready: ${JSON.stringify(r.rows)}`).toBe(true)
      await new Promise((r) => setTimeout(r, 50))
    }
  }

  beforeAll(async () => {
    db = new PGlite()
    // Walsender connections start with the engine's setting: 64kB makes the
    // streaming subscription's larger transactions go out as Stream chunks.
    await db.exec(`SET logical_decoding_work_mem = '64kB'`)
    await installChangeTracking(db, { retention: 'discard' })
    for (const [name, cols] of Object.entries(TABLES)) await db.exec(`CREATE TABLE ${name} (${cols})`)
    await db.exec(`INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 50) g;
                   INSERT INTO u VALUES (1, '{"k": [1, 2]}', 1.5, '2026-01-02 03:04:05.678+00', '\\x00ff', '{1,NULL,3}', NULL);
                   INSERT INTO w VALUES ('a', 1);
                   CREATE PUBLICATION p FOR TABLE t, u`)
    server = await listen(db)
    sub = startPg15(await freePort(), ['postgres', 'options'])
    for (const database of ['postgres', 'options']) {
      const c = await connect(sub.url(database))
      for (const [name, cols] of Object.entries(TABLES)) await c.query(`CREATE TABLE ${name} (${cols})`)
    }
  }, 120_000)

  afterAll(async () => {
    for (const c of clients) await c.end().catch(() => {})
    sub?.stop()
    await server?.close()
    await db?.close()
  })

  const publisher = () => `host=127.0.0.1 port=${server.port} user=postgres dbname=postgres`

  it('copies the published tables, then streams inserts, updates, deletes and truncates', async () => {
    const c = await connect(sub.url('postgres'))
    await c.query(`CREATE SUBSCRIPTION s CONNECTION '${publisher()}' PUBLICATION p`)
    await caughtUp(c, 't')
    await caughtUp(c, 'u')
    await ready(c)
    // The subscription's slot is on tabgres; the slots the sync workers made (one per table) are dropped.
    const slots = await db.query<{ slot_name: string; temporary: boolean }>(`SELECT slot_name, temporary FROM pg_replication_slots`)
    expect(slots.rows).toEqual([{ slot_name: 's', temporary: false }])

    await db.exec(`INSERT INTO t VALUES (51, 'new');
                   UPDATE t SET v = 'changed' WHERE id <= 5;
                   DELETE FROM t WHERE id BETWEEN 10 AND 19;
                   BEGIN; UPDATE t SET id = 1000 WHERE id = 50; INSERT INTO t VALUES (52, NULL); COMMIT;
                   INSERT INTO u VALUES (2, '[]', -0.001, '2026-12-06 00:00:00+00', '\\x', '{}', 'x''y');
                   UPDATE u SET g = repeat('z', 5000) WHERE a = 1`)
    await caughtUp(c, 't')
    await caughtUp(c, 'u')

    await db.exec(`TRUNCATE t; INSERT INTO t VALUES (1, 'after truncate')`)
    await caughtUp(c, 't')
    expect(await rows(c, 't')).toEqual(['(1,"after truncate")'])
  })

  it('ALTER SUBSCRIPTION ... REFRESH PUBLICATION picks up a table added to the publication', async () => {
    const c = await connect(sub.url('postgres'))
    await db.exec(`ALTER PUBLICATION p ADD TABLE w`)
    await c.query(`ALTER SUBSCRIPTION s REFRESH PUBLICATION`)
    await caughtUp(c, 'w')
    await db.exec(`INSERT INTO w VALUES ('b', 2), ('c', 9223372036854775806); DELETE FROM w WHERE k = 'a'`)
    await caughtUp(c, 'w')
    expect(await rows(c, 'w')).toEqual(['(b,2)', '(c,9223372036854775806)'])
  })

  it('streaming, two_phase, disable_on_error and binary: large transactions stream, values arrive in binary, the subscription enables two-phase and stays enabled', async () => {
    const c = await connect(sub.url('options'))
    await c.query(`CREATE SUBSCRIPTION s_opts CONNECTION '${publisher()}' PUBLICATION p
                     WITH (streaming = on, two_phase = on, disable_on_error = true, binary = true)`)
    await caughtUp(c, 't')
    await caughtUp(c, 'w')
    // With two_phase the apply worker restarts once the tables are ready, to
    // start streaming with two_phase 'on' (state p -> e).
    const deadline = Date.now() + CATCH_UP_MS
    for (;;) {
      const s = await c.query(`SELECT subtwophasestate, subenabled FROM pg_subscription WHERE subname = 's_opts'`)
      if (s.rows[0].subtwophasestate === 'e') break
      expect(s.rows[0].subenabled).toBe(true)
      expect(Date.now() < deadline, `two_phase still ${s.rows[0].subtwophasestate}`).toBe(true)
      await new Promise((r) => setTimeout(r, 50))
    }
    await db.exec(`INSERT INTO t SELECT g, 'streamed ' || g FROM generate_series(2, 2000) g; UPDATE w SET n = n + 1;
                   INSERT INTO u VALUES (3, '{"binary": [true, null]}', -123456.789, '1999-12-31 23:59:59.5+00', '\\xdeadbeef', '{{1,2},{3,4}}', 'b');
                   UPDATE u SET c = 'NaN', f = '[0:1]={5,6}' WHERE a = 1`)
    await caughtUp(c, 't')
    await caughtUp(c, 'w')
    await caughtUp(c, 'u')
    const s = await c.query(`SELECT subenabled FROM pg_subscription WHERE subname = 's_opts'`)
    expect(s.rows[0].subenabled).toBe(true)
  })

  it('DROP SUBSCRIPTION drops its slot on tabgres', async () => {
    for (const [database, name] of [['postgres', 's'], ['options', 's_opts']]) {
      const c = await connect(sub.url(database))
      await c.query(`DROP SUBSCRIPTION ${name}`)
    }
    const slots = await db.query(`SELECT slot_name FROM pg_replication_slots`)
    expect(slots.rows).toEqual([])
  })
}, 300_000)
