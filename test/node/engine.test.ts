// Engine behaviour beyond the conformance workload: transaction boundaries,
// isolation from open transactions, publications, commands and their errors.
// Every wait is on a frame (keepalive at or past the write position), never a timer.

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import { parseLsn } from '../../src/protocol/lsn'
import type { PgoutputMessage } from '../../src/protocol/pgoutput'
import { installChangeTracking } from '../../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import { handleReplicationQuery as orezReplicationQuery, handleStartReplication as orezStartReplication } from '../../src/orez/handler'
import { golden, conformanceAvailable } from '../support/conformance'
import { payloads, recordStream } from '../support/stream'

let slotCounter = 0

async function openStream(db: PGlite, publication: string | null, extra = '') {
  const slot = `s${++slotCounter}`
  const created = await handleReplicationQuery(`CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput`, db)
  expect(created![0]).toBe(0x54)
  const rec = recordStream()
  let session!: ReplicationSession
  const opts = publication === null ? '' : `(proto_version '1', publication_names '${publication}'${extra})`
  // Without a publication, orez's leniency streams every table.
  const start = publication === null ? orezStartReplication : handleStartReplication
  const done = start(`START_REPLICATION SLOT ${slot} LOGICAL 0/0 ${opts}`, rec.writer, db, { onSession: (s) => (session = s) })
  await rec.waitFor((f) => f.tag === 'k')
  return {
    rec,
    slot,
    /** Wait until the stream has caught up with everything committed so far. */
    async caughtUp(): Promise<PgoutputMessage[]> {
      const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
      const target = parseLsn(lsn)!
      await rec.waitFor((f) => f.tag === 'k' && f.walEnd >= target)
      return payloads(rec).map(decodePgoutput)
    },
    async stop() {
      session.stop()
      await done
    },
  }
}

function errorCode(bytes: Uint8Array | null): string | null {
  if (!bytes || bytes[0] !== 0x45) return null
  const text = new TextDecoder().decode(bytes.subarray(5))
  const m = /\0C([0-9A-Z]{5})\0/.exec('\0' + text)
  return m ? m[1] : null
}

describe('engine', () => {
  let db: PGlite

  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`
      CREATE TABLE t (id int PRIMARY KEY, v text);
      CREATE SCHEMA other;
      -- Column "n" once collided with the capture's row alias (regression).
      CREATE TABLE other.o (id int PRIMARY KEY, n numeric(6,2));
      CREATE PUBLICATION p_all FOR ALL TABLES;
      CREATE PUBLICATION p_t FOR TABLE t;
      CREATE PUBLICATION p_ins FOR TABLE t WITH (publish = 'insert');
    `)
  })

  afterAll(async () => {
    await db.close()
  })

  it('streams each committed transaction whole, once, with its own xid', async () => {
    const s = await openStream(db, 'p_t')
    await db.transaction(async (tx) => {
      for (let i = 0; i < 150; i++) await tx.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])
    })
    await db.exec(`INSERT INTO t VALUES (1000, 'a'); INSERT INTO t VALUES (1001, 'b')`) // one implicit transaction
    await db.exec(`INSERT INTO t VALUES (1002, 'c')`)
    const msgs = await s.caughtUp()
    const txns: PgoutputMessage[][] = []
    for (const m of msgs) {
      if (m.tag === 'B') txns.push([m])
      else if (txns.length) txns[txns.length - 1].push(m)
    }
    expect(txns.map((t) => t.filter((m) => m.tag === 'I').length)).toEqual([150, 2, 1])
    const begins = msgs.filter((m) => m.tag === 'B') as Extract<PgoutputMessage, { tag: 'B' }>[]
    const commits = msgs.filter((m) => m.tag === 'C') as Extract<PgoutputMessage, { tag: 'C' }>[]
    expect(new Set(begins.map((b) => b.xid)).size).toBe(3)
    begins.forEach((b, i) => expect(b.finalLsn).toBe(commits[i].commitLsn))
    for (let i = 1; i < commits.length; i++) expect(commits[i].commitLsn > commits[i - 1].endLsn).toBe(true)
    await s.stop()
  })

  it('rolled-back transactions and savepoints leave nothing; open transactions are invisible', async () => {
    const s = await openStream(db, 'p_t')
    await db.exec(`BEGIN; INSERT INTO t VALUES (2000, 'rolled back'); ROLLBACK`)
    await db.exec(`BEGIN; INSERT INTO t VALUES (2001, 'kept'); SAVEPOINT a; INSERT INTO t VALUES (2002, 'gone'); ROLLBACK TO a; COMMIT`)
    // An explicit transaction left open across calls: the reader must not stream it.
    await db.exec(`BEGIN`)
    await db.exec(`INSERT INTO t VALUES (2003, 'uncommitted')`)
    await db.exec(`SELECT pg_notify('_tabgres_commit', '')`) // a stray wake-up while it is open
    await db.exec(`ROLLBACK`)
    await db.exec(`INSERT INTO t VALUES (2004, 'after')`)
    const msgs = await s.caughtUp()
    const values = msgs.flatMap((m) => (m.tag === 'I' ? [(m.new.columns[1] as { value: string }).value] : []))
    expect(values).toEqual(['kept', 'after'])
    await s.stop()
  })

  it('publications choose tables and actions, and changes apply to later changes', async () => {
    const s = await openStream(db, 'p_ins')
    const all = await openStream(db, 'p_all')
    await db.exec(`INSERT INTO t VALUES (3000, 'x'); UPDATE t SET v = 'y' WHERE id = 3000; DELETE FROM t WHERE id = 3000`)
    await db.exec(`INSERT INTO other.o VALUES (1, 1.5)`)
    await db.exec(`ALTER PUBLICATION p_ins ADD TABLE other.o`)
    await db.exec(`INSERT INTO other.o VALUES (2, 2.25)`)
    const msgs = await s.caughtUp()
    expect(msgs.filter((m) => 'relationOid' in m && m.tag !== 'R').map((m) => m.tag)).toEqual(['I', 'I'])
    const rels = msgs.filter((m) => m.tag === 'R') as Extract<PgoutputMessage, { tag: 'R' }>[]
    expect(rels.map((r) => `${r.namespace}.${r.relation}`)).toEqual(['public.t', 'other.o'])
    expect(rels[1].columns).toEqual([
      { flags: 1, name: 'id', typeOid: 23, typeMod: -1 },
      { flags: 0, name: 'n', typeOid: 1700, typeMod: (6 << 16) + 2 + 4 },
    ])
    const allMsgs = await all.caughtUp()
    expect(allMsgs.filter((m) => ['I', 'U', 'D'].includes(m.tag)).map((m) => m.tag)).toEqual(['I', 'U', 'D', 'I', 'I'])
    await s.stop()
    await all.stop()
  })

  it("pg_publication_tables lists what the stream carries, not the engine's own tables (found by the playground's replica)", async () => {
    await db.exec(`CREATE PUBLICATION p_schema FOR TABLES IN SCHEMA other, _tabgres`)
    const listed = await db.query<{ pubname: string; t: string }>(
      `SELECT pubname, schemaname || '.' || tablename AS t FROM pg_publication_tables
        WHERE pubname IN ('p_all', 'p_t', 'p_schema') ORDER BY 1, 2`,
    )
    expect(listed.rows.filter((r) => r.pubname === 'p_all').map((r) => r.t)).toContain('public.t')
    expect(listed.rows.map((r) => r.t).filter((t) => t.startsWith('_tabgres'))).toEqual([])
    expect(listed.rows.filter((r) => r.pubname === 'p_schema').map((r) => r.t)).toEqual(['other.o'])
    // The columns and types of PostgreSQL's view.
    const cols = await db.query<{ attname: string; t: string }>(
      `SELECT attname, format_type(atttypid, atttypmod) AS t FROM pg_attribute
        WHERE attrelid = 'pg_catalog.pg_publication_tables'::regclass AND attnum > 0 ORDER BY attnum`,
    )
    expect(cols.rows.map((c) => `${c.attname} ${c.t}`)).toEqual(['pubname name', 'schemaname name', 'tablename name', 'attnames name[]', 'rowfilter text'])
    await db.exec(`DROP PUBLICATION p_schema`)
  })

  it('tracks tables created after start, and re-sends Relation after ALTER TABLE', async () => {
    const s = await openStream(db, 'p_all')
    await db.exec(`CREATE TABLE later (id int PRIMARY KEY, a text)`)
    await db.exec(`INSERT INTO later VALUES (1, 'one')`)
    await db.exec(`ALTER TABLE later ADD COLUMN b int DEFAULT 5, DROP COLUMN a`)
    await db.exec(`INSERT INTO later VALUES (2, 6)`)
    const msgs = await s.caughtUp()
    const rels = msgs.filter((m) => m.tag === 'R') as Extract<PgoutputMessage, { tag: 'R' }>[]
    expect(rels.map((r) => r.columns.map((c) => c.name))).toEqual([['id', 'a'], ['id', 'b']])
    const ins = msgs.filter((m) => m.tag === 'I') as Extract<PgoutputMessage, { tag: 'I' }>[]
    expect(ins.map((i) => i.new.columns)).toEqual([
      [{ kind: 't', value: '1' }, { kind: 't', value: 'one' }],
      [{ kind: 't', value: '2' }, { kind: 't', value: '6' }],
    ])
    await s.stop()
  })

  it('a confirmed position is never re-sent after a restart of the stream', async () => {
    const s = await openStream(db, 'p_t')
    await db.exec(`INSERT INTO t VALUES (4000, 'first')`)
    const first = await s.caughtUp()
    const commit = first.find((m) => m.tag === 'C') as Extract<PgoutputMessage, { tag: 'C' }>
    // Acknowledge through a standby status update, as a consumer would.
    const ack = new Uint8Array(34)
    const dv = new DataView(ack.buffer)
    ack[0] = 0x72
    dv.setBigUint64(1, commit.endLsn)
    dv.setBigUint64(9, commit.endLsn)
    dv.setBigUint64(17, commit.endLsn)
    let session!: ReplicationSession
    // feed the ack through the running session
    await s.stop()
    const rec = recordStream()
    const done = handleStartReplication(
      `START_REPLICATION SLOT ${s.slot} LOGICAL 0/0 (proto_version '1', publication_names 'p_t')`,
      rec.writer,
      db,
      { onSession: (x) => (session = x) },
    )
    await rec.waitFor((f) => f.tag === 'k')
    // Without an ack the first transaction is streamed again (the slot did not confirm it).
    await rec.waitFor((f) => f.tag === 'w' && f.data[0] === 0x43)
    session.receive(ack)
    await db.exec(`INSERT INTO t VALUES (4001, 'second')`)
    const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
    await rec.waitFor((f) => f.tag === 'k' && f.walEnd >= parseLsn(lsn)!)
    session.stop()
    await done
    // A third stream, from 0/0: the slot's confirmed_flush_lsn wins; only 'second' remains.
    const rec3 = recordStream()
    let s3!: ReplicationSession
    const done3 = handleStartReplication(
      `START_REPLICATION SLOT ${s.slot} LOGICAL 0/0 (proto_version '1', publication_names 'p_t')`,
      rec3.writer,
      db,
      { onSession: (x) => (s3 = x) },
    )
    await rec3.waitFor((f) => f.tag === 'k' && f.walEnd >= parseLsn(lsn)!)
    const values = payloads(rec3)
      .map(decodePgoutput)
      .flatMap((m) => (m.tag === 'I' ? [(m.new.columns[1] as { value: string }).value] : []))
    expect(values).toEqual(['second'])
    s3.stop()
    await done3
  })

  it('answers bad commands with PostgreSQL error codes and executes nothing', async () => {
    const q = (sql: string) => handleReplicationQuery(sql, db)
    await q('CREATE_REPLICATION_SLOT dup LOGICAL pgoutput')
    expect(errorCode(await q('CREATE_REPLICATION_SLOT dup LOGICAL pgoutput'))).toBe('42710')
    expect(errorCode(await q('DROP_REPLICATION_SLOT no_such_slot'))).toBe('42704')
    expect(errorCode(await q(`CREATE_REPLICATION_SLOT "x'); DROP TABLE t; --" LOGICAL pgoutput`))).toBe('42602')
    expect(errorCode(await q(`CREATE_REPLICATION_SLOT x'); DROP TABLE t; -- LOGICAL pgoutput`))).toBe('42601')
    expect(errorCode(await q('CREATE_REPLICATION_SLOT ok LOGICAL test_decoding'))).toBe('0A000')
    expect((await db.query(`SELECT count(*)::int AS n FROM t`)).rows[0]).toMatchObject({ n: expect.any(Number) })
    const start = async (sql: string) => {
      const rec = recordStream()
      await handleStartReplication(sql, rec.writer, db).catch(() => {})
      return errorCode(rec.messages[0])
    }
    expect(await start(`START_REPLICATION SLOT no_such_slot LOGICAL 0/0 (proto_version '1', publication_names 'p_t')`)).toBe('42704')
    expect(await start(`START_REPLICATION SLOT dup LOGICAL 0/0 (proto_version '1', publication_names 'nope')`)).toBe('42704')
    expect(await start(`START_REPLICATION SLOT dup LOGICAL 0/0 (publication_names 'p_t')`)).toBe('0A000')
    expect(await start(`START_REPLICATION SLOT dup LOGICAL 0/0 (proto_version '1')`)).toBe('22023')
    expect(await start(`START_REPLICATION SLOT dup LOGICAL 0/0 (proto_version '1', publication_names 'p_t', two_phase 'on')`)).toBe('0A000')
    expect(await start(`START_REPLICATION SLOT dup LOGICAL 0/0 (proto_version '1', publication_names 'p_t', bogus 'x')`)).toBe('22023')
  })

  it.skipIf(!conformanceAvailable())('command results have the columns and types PostgreSQL returns', async () => {
    const g = golden('commands.json').A
    const fields = (bytes: Uint8Array) => {
      const dv = new DataView(bytes.buffer, bytes.byteOffset)
      const n = dv.getInt16(5)
      let pos = 7
      const out = []
      for (let i = 0; i < n; i++) {
        const end = bytes.indexOf(0, pos)
        const name = new TextDecoder().decode(bytes.subarray(pos, end))
        pos = end + 1
        out.push({ name, tableOid: dv.getUint32(pos), columnAttr: dv.getInt16(pos + 4), typeOid: dv.getUint32(pos + 6), typeLen: dv.getInt16(pos + 10), typeMod: dv.getInt32(pos + 12), format: dv.getInt16(pos + 16) })
        pos += 18
      }
      return out
    }
    const q = (sql: string) => handleReplicationQuery(sql, db)
    expect(fields((await q('IDENTIFY_SYSTEM'))!)).toEqual(g.IDENTIFY_SYSTEM.results[0].fields)
    expect(fields((await q('SHOW wal_level'))!)).toEqual(g.SHOW_wal_level.results[0].fields)
    // SQL on a replication connection runs in the backend, where the shim answers it (orez's handler runs it there too).
    expect(fields((await orezReplicationQuery(`SELECT current_setting('wal_level')`, db))!)).toEqual(
      g.select_current_setting_wal_level.replicationConnection.results[0].fields,
    )
    expect(fields((await q('CREATE_REPLICATION_SLOT shape LOGICAL pgoutput NOEXPORT_SNAPSHOT'))!)).toEqual(
      g.CREATE_REPLICATION_SLOT.results[0].fields,
    )
  })
})

describe('slots in use', () => {
  let db: PGlite
  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR ALL TABLES`)
  })
  afterAll(async () => {
    await db.close()
  })

  it('a streaming slot answers 55006 to a second stream and to DROP; DROP ... WAIT waits for the stream to end', async () => {
    const s = await openStream(db, 'p')
    const rec = recordStream()
    await expect(
      handleStartReplication(`START_REPLICATION SLOT ${s.slot} LOGICAL 0/0 (proto_version '1', publication_names 'p')`, rec.writer, db),
    ).rejects.toMatchObject({ code: '55006' })
    expect(errorCode(await handleReplicationQuery(`DROP_REPLICATION_SLOT ${s.slot}`, db))).toBe('55006')
    let dropped = false
    const drop = handleReplicationQuery(`DROP_REPLICATION_SLOT ${s.slot} WAIT`, db).then((r) => {
      dropped = true
      return r
    })
    await Promise.resolve()
    expect(dropped).toBe(false)
    await s.stop()
    expect((await drop)![0]).toBe(0x43) // CommandComplete
    expect((await db.query(`SELECT count(*)::int AS n FROM pg_replication_slots WHERE slot_name = '${s.slot}'`)).rows[0]).toEqual({ n: 0 })
  })
})

describe('generated and zero-column tables', () => {
  it('writes to tables with stored and virtual generated columns succeed and stream without them', async () => {
    const db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`
      CREATE TABLE g (id int PRIMARY KEY, a int, s int GENERATED ALWAYS AS (a * 2) STORED, v int GENERATED ALWAYS AS (a * 3));
      CREATE TABLE empty_cols ();
      CREATE PUBLICATION p FOR ALL TABLES;`)
    const s = await openStream(db, 'p')
    await db.exec(`INSERT INTO g (id, a) VALUES (1, 5); UPDATE g SET a = 6; DELETE FROM g; INSERT INTO empty_cols DEFAULT VALUES`)
    const msgs = await s.caughtUp()
    const rel = msgs.find((m) => m.tag === 'R' && m.relation === 'g') as Extract<PgoutputMessage, { tag: 'R' }>
    expect(rel.columns.map((c) => c.name)).toEqual(['id', 'a'])
    const rows = msgs.flatMap((m) => (m.tag === 'I' || m.tag === 'U' ? [m.new.columns.length] : []))
    expect(rows).toEqual([2, 2, 0])
    expect(msgs.filter((m) => m.tag === 'D')).toHaveLength(1)
    await s.stop()
    await db.close()
  })
})

describe('replica identity on the writer', () => {
  it('refuses UPDATE and DELETE of a published table without a usable identity (55000), as PostgreSQL does, through every change of identity', async () => {
    const db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE k (id int, v text); CREATE TABLE unpublished (id int); CREATE PUBLICATION p FOR TABLE k;
      INSERT INTO k VALUES (1, 'a'); INSERT INTO unpublished VALUES (1)`)
    const code = (sql: string) => db.exec(sql).then(
      () => 'ok',
      (e: { code: string }) => e.code,
    )
    const checks = async () =>
      (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_trigger WHERE tgrelid = 'k'::regclass AND tgname = '_tabgres_0_check'`)).rows[0].n
    expect(await code(`UPDATE k SET v = 'b'`)).toBe('55000')
    expect(await code(`DELETE FROM k`)).toBe('55000')
    expect(await code(`UPDATE unpublished SET id = 2`)).toBe('ok') // not published: nothing to refuse
    await db.exec(`ALTER TABLE k ADD PRIMARY KEY (id)`)
    expect(await checks()).toBe(0) // default identity with a key: nothing to check per statement
    expect(await code(`UPDATE k SET v = 'b'`)).toBe('ok')
    await db.exec(`ALTER TABLE k DROP CONSTRAINT k_pkey`)
    expect(await checks()).toBe(1)
    expect(await code(`UPDATE k SET v = 'c'`)).toBe('55000')
    await db.exec(`ALTER TABLE k REPLICA IDENTITY FULL`)
    expect(await checks()).toBe(0)
    expect(await code(`DELETE FROM k`)).toBe('ok')
    await db.exec(`INSERT INTO k VALUES (2, 'x'); ALTER TABLE k REPLICA IDENTITY NOTHING`)
    expect(await code(`UPDATE k SET v = 'y'`)).toBe('55000')
    await db.exec(`CREATE UNIQUE INDEX k_id ON k (id); ALTER TABLE k ALTER COLUMN id SET NOT NULL; ALTER TABLE k REPLICA IDENTITY USING INDEX k_id`)
    expect(await code(`UPDATE k SET v = 'y'`)).toBe('ok')
    await db.exec(`DROP INDEX k_id`) // the identity index gone: as NOTHING
    expect(await code(`UPDATE k SET v = 'z'`)).toBe('55000')
    await db.close()
  })

  it('one-row and many-row UPDATEs stream their old and new rows paired, in the order of the scan', async () => {
    const db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE u (id int PRIMARY KEY, v int); ALTER TABLE u REPLICA IDENTITY FULL; CREATE PUBLICATION p FOR TABLE u;
      INSERT INTO u SELECT i, i FROM generate_series(1, 3) i`)
    const s = await openStream(db, 'p')
    await db.exec(`UPDATE u SET v = v + 10 WHERE id = 2`)
    await db.exec(`UPDATE u SET v = v + 100`) // id 2's new version is last in the heap now
    await db.exec(`UPDATE u SET v = 0 WHERE id = 99`) // no row: nothing
    const msgs = await s.caughtUp()
    const updates = msgs.filter((m) => m.tag === 'U') as Extract<PgoutputMessage, { tag: 'U' }>[]
    const values = (t: { columns: { kind: string; value?: unknown }[] }) => t.columns.map((c) => (c.kind === 't' ? c.value : c.kind)).join(',')
    expect(updates.map((u) => `${values(u.old!)} -> ${values(u.new)}`)).toEqual(['2,2 -> 2,12', '1,1 -> 1,101', '3,3 -> 3,103', '2,12 -> 2,112'])
    expect(msgs.filter((m) => m.tag === 'B')).toHaveLength(2)
    await s.stop()
    await db.close()
  })
})
