// Hostile identifiers and values: slot, publication, option, schema, table
// and column names with quotes, backslashes, semicolons, unicode (emoji,
// combining marks, bidi overrides), SQL fragments and more than 63 bytes,
// through the replication command handler and through the wire session.
// Nothing is ever executed (a canary table survives); names come back in
// Relation messages byte for byte as PostgreSQL stored them (cut to 63
// bytes on a character boundary); values are intact; the rest fails with
// the SQLSTATE PostgreSQL 15 answers (checked against its binaries:
// 42602 invalid slot name, 42704 unknown slot or publication, 42601 syntax).

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import type { PgoutputMessage } from '../../src/protocol/pgoutput'
import { decodeFrame } from '../../src/protocol/replication-frames'
import { installChangeTracking } from '../../src/engine/install'
import { truncateIdentifier } from '../../src/engine/replication/commands'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import * as w from '../fuzz/wire-client'

const INJECTION = `x'); DROP TABLE canary; --`
/** Quote an identifier for SQL (double quotes doubled). */
const ident = (s: string) => `"${s.replace(/"/g, '""')}"`
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`
const bytes = (s: string) => new TextEncoder().encode(s).length

const SCHEMA = `s'"\\;😀${INJECTION}`
const TABLES = [INJECTION, `t"q'`, 'e\u0301😀\u202e', 'é'.repeat(40), 'UPPER', 'back\\slash;', 'x'.repeat(70)]
const COLUMNS = [`c'"`, `c;--`, 'ümlaut e\u0301', 'z'.repeat(70), 'select', '$$', 'tab\tnew\nline']
const VALUES = [INJECTION, `"`, '\\', '😀e\u0301', '\u202e\ufeff', `'; SELECT pg_sleep(10); --`, '$$ $x$ \\x00 %s %n']
const PUBLICATION = `pub'"; DROP TABLE canary; --😀`

function errorCode(reply: Uint8Array | null): string | null {
  if (!reply || reply[0] !== 0x45) return null
  return w.errorFields(w.splitBackend(reply)[0].body).C
}

function dataValues(reply: Uint8Array): (string | null)[] {
  const row = w.splitBackend(reply).find((m) => m.tag === 'D')
  return row ? w.dataRowValues(row.body) : []
}

describe('hostile identifiers', () => {
  let db: PGlite
  const canary = async () => (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM canary')).rows[0].n

  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(`CREATE TABLE canary (id int); INSERT INTO canary VALUES (1)`)
    await db.exec(`CREATE SCHEMA ${ident(SCHEMA)}`)
    for (const t of TABLES) {
      const cols = COLUMNS.map((c) => `${ident(c)} text`).join(', ')
      await db.exec(`CREATE TABLE ${ident(SCHEMA)}.${ident(t)} (id int PRIMARY KEY, ${cols})`)
    }
    await db.exec(`CREATE PUBLICATION ${ident(PUBLICATION)} FOR ALL TABLES`)
  })
  afterAll(async () => {
    expect(await canary()).toBe(1)
    await db.close()
  })

  const q = (sql: string) => handleReplicationQuery(sql, db)

  it('invalid slot names fail with the SQLSTATE PostgreSQL 15 answers; nothing runs', async () => {
    const cases: [string, string][] = [
      [`"${INJECTION}"`, '42602'],
      [INJECTION, '42601'],
      [`"a""b"`, '42602'],
      [`"back\\slash"`, '42602'],
      [`"semi;colon"`, '42602'],
      [`"emoji😀"`, '42602'],
      [`"e\u0301"`, '42602'],
      [`"UPPER"`, '42602'],
      [`"${'é'.repeat(40)}"`, '42602'],
      [`"with space"`, '42602'],
    ]
    for (const [name, code] of cases) {
      expect([name, errorCode(await q(`CREATE_REPLICATION_SLOT ${name} TEMPORARY LOGICAL pgoutput`))]).toEqual([name, code])
    }
    expect(await canary()).toBe(1)
  })

  // Regression: tabgres rejected these with 42622 "too long".
  it('a slot name longer than 63 bytes is cut to 63, as PostgreSQL 15 does (it was rejected with 42622)', async () => {
    // PostgreSQL's replication scanner truncates identifiers, quoted or not, to
    // NAMEDATALEN - 1 bytes before the slot name is checked.
    for (const [written, stored] of [
      ['a'.repeat(70), 'a'.repeat(63)],
      [`"${'b'.repeat(70)}"`, 'b'.repeat(63)],
      ['UPPER_Case', 'upper_case'],
    ]) {
      const reply = await q(`CREATE_REPLICATION_SLOT ${written} LOGICAL pgoutput`)
      expect(dataValues(reply!)[0]).toBe(stored)
      expect(errorCode(await q(`DROP_REPLICATION_SLOT ${written}`))).toBeNull()
    }
  })

  // Regression: tabgres validated the name first and answered 42602.
  it('DROP_REPLICATION_SLOT and START_REPLICATION of a name no slot can have answer 42704, as PostgreSQL 15 does (it was 42602)', async () => {
    for (const name of [`"Bad"`, `"${INJECTION}"`, `"${'é'.repeat(40)}"`]) {
      expect(errorCode(await q(`DROP_REPLICATION_SLOT ${name}`))).toBe('42704')
      const out: Uint8Array[] = []
      const err = await handleStartReplication(
        `START_REPLICATION SLOT ${name} LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
        { write: (b) => void out.push(b) },
        db,
        {},
      ).catch((e) => e)
      expect(err.code).toBe('42704')
      expect(errorCode(out[0])).toBe('42704')
    }
    expect(errorCode(await q(`SHOW "${INJECTION}"`))).toBe('42704')
    expect((await db.query('SELECT slot_name FROM pg_replication_slots')).rows).toEqual([])
    expect(await canary()).toBe(1)
  })

  it('publication names and option names/values: unknown ones fail cleanly, nothing runs', async () => {
    await q('CREATE_REPLICATION_SLOT hostile_opts LOGICAL pgoutput')
    const start = async (options: string) => {
      const out: Uint8Array[] = []
      const err = await handleStartReplication(`START_REPLICATION SLOT hostile_opts LOGICAL 0/0 (${options})`, { write: (b) => void out.push(b) }, db, {
        onSession: (s) => s.stop(),
      }).catch((e) => e)
      return err?.code ?? 'streamed'
    }
    const pubs = (list: string) => `proto_version '1', publication_names ${lit(list)}`
    expect(await start(pubs(`"${INJECTION}"`))).toBe('42704')
    expect(await start(pubs(`a,"b""c",${INJECTION}`))).toBe('42602') // an unquoted name cannot hold spaces
    expect(await start(pubs(`"${PUBLICATION.replace(/"/g, '""')}"`))).toBe('streamed')
    expect(await start(`proto_version ${lit(`1'); DROP TABLE canary; --`)}, publication_names 'x'`)).toBe('22023')
    expect(await start(`proto_version '1', publication_names 'x', ${ident(INJECTION)} 'v'`)).toBe('22023')
    expect(await start(`proto_version '1', publication_names 'x', messages ${lit(INJECTION)}`)).toBe('22023')
    expect(await start(`proto_version '1', publication_names 'x', origin ${lit(INJECTION)}`)).toBe('22023')
    expect(errorCode(await q('DROP_REPLICATION_SLOT hostile_opts'))).toBeNull()
    expect(await canary()).toBe(1)
  })

  it('schema, table and column names and values round-trip byte for byte through the stream (handler)', async () => {
    await q('CREATE_REPLICATION_SLOT hostile_names LOGICAL pgoutput')
    let id = 0
    for (const t of TABLES) {
      id++
      const values = COLUMNS.map((_, i) => VALUES[(i + id) % VALUES.length])
      await db.query(
        `INSERT INTO ${ident(SCHEMA)}.${ident(t)} VALUES ($1, ${COLUMNS.map((_, i) => `$${i + 2}`).join(', ')})`,
        [id, ...values],
      )
    }
    const msgs = await stream(db, 'hostile_names', PUBLICATION, TABLES.length)
    checkRoundTrip(msgs)
    expect(errorCode(await q('DROP_REPLICATION_SLOT hostile_names'))).toBeNull()
  })

  it('the same through the wire session: hostile SQL names and Bind values in, Relation and Insert out', async () => {
    const repl = await w.connect(db, { replication: 'database' })
    for (const name of [`"${INJECTION}"`, `"${'é'.repeat(40)}"`]) {
      const reply = await repl.query(`CREATE_REPLICATION_SLOT ${name} TEMPORARY LOGICAL pgoutput`)
      expect(reply.filter((m) => m.tag === 'E').map((m) => w.errorFields(m.body).C)).toEqual(['42602'])
    }
    expect((await repl.query(`CREATE_REPLICATION_SLOT hostile_wire LOGICAL pgoutput`)).at(-1)!.tag).toBe('Z')
    const sql = await w.connect(db)
    let id = 100
    for (const t of TABLES) {
      id++
      const values = COLUMNS.map((_, i) => VALUES[(i + id) % VALUES.length])
      sql.send(
        w.parse('', `INSERT INTO ${ident(SCHEMA)}.${ident(t)} VALUES ($1, ${COLUMNS.map((_, i) => `$${i + 2}`).join(', ')})`),
        w.bind('', '', [String(id), ...values]),
        w.execute(''),
        w.sync(),
      )
      const before = sql.messages().filter((m) => m.tag === 'Z').length
      const m = await sql.until((ms) => ms.filter((x) => x.tag === 'Z').length > before)
      expect(m.filter((x) => x.tag === 'E').map((x) => w.errorFields(x.body).M)).toEqual([])
    }
    // Stream over the replication connection and decode its CopyData frames.
    repl.send(w.query(`START_REPLICATION SLOT hostile_wire LOGICAL 0/0 (proto_version '1', publication_names ${lit(`"${PUBLICATION.replace(/"/g, '""')}"`)})`))
    const decoded = () =>
      repl
        .messages()
        .filter((m) => m.tag === 'd')
        .map((m) => decodeFrame(m.body))
        .flatMap((f) => (f.tag === 'w' ? [decodePgoutput(f.data)] : []))
    await repl.until(() => decoded().filter((m) => m.tag === 'I').length >= TABLES.length)
    checkRoundTrip(decoded())
    repl.send(w.copyDone())
    await repl.until((ms) => ms.at(-1)?.tag === 'Z')
    repl.send(w.terminate())
    sql.send(w.terminate())
    await Promise.all([repl.session.closed, sql.session.closed])
    expect(errorCode(await q('DROP_REPLICATION_SLOT hostile_wire'))).toBeNull()
    expect(await canary()).toBe(1)
  })

  /** Relation names equal the catalog's and PostgreSQL's 63-byte cut of what was written; values intact. */
  function checkRoundTrip(msgs: PgoutputMessage[]): void {
    const relations = new Map<number, Extract<PgoutputMessage, { tag: 'R' }>>()
    for (const m of msgs) if (m.tag === 'R') relations.set(m.relationOid, m)
    const inserts = msgs.filter((m): m is Extract<PgoutputMessage, { tag: 'I' }> => m.tag === 'I')
    expect(inserts).toHaveLength(TABLES.length)
    const seenTables = new Set<string>()
    for (const ins of inserts) {
      const rel = relations.get(ins.relationOid)!
      expect(rel.namespace).toBe(SCHEMA)
      expect(TABLES.map(truncateIdentifier)).toContain(rel.relation)
      seenTables.add(rel.relation)
      expect(rel.columns.map((c) => c.name)).toEqual(['id', ...COLUMNS.map(truncateIdentifier)])
      for (const c of rel.columns) expect(bytes(c.name)).toBeLessThanOrEqual(63)
      const [idCol, ...rest] = ins.new.columns
      const id = Number((idCol as { value: string }).value)
      expect(rest.map((c) => (c.kind === 't' ? c.value : c.kind))).toEqual(COLUMNS.map((_, i) => VALUES[(i + id) % VALUES.length]))
    }
    expect(seenTables.size).toBe(TABLES.length)
  }
})

/** START_REPLICATION on the handler until `inserts` Insert messages arrived; then stop. */
async function stream(db: PGlite, slot: string, publication: string, inserts: number): Promise<PgoutputMessage[]> {
  const msgs: PgoutputMessage[] = []
  let session: ReplicationSession | null = null
  let enough!: () => void
  const got = new Promise<void>((r) => (enough = r))
  const done = handleStartReplication(
    `START_REPLICATION SLOT ${slot} LOGICAL 0/0 (proto_version '1', publication_names ${lit(`"${publication.replace(/"/g, '""')}"`)})`,
    {
      write(b) {
        if (b[0] !== 0x64) return
        const f = decodeFrame(b.subarray(5))
        if (f.tag !== 'w') return
        msgs.push(decodePgoutput(f.data))
        if (msgs.filter((m) => m.tag === 'I').length >= inserts) enough()
      },
    },
    db,
    { onSession: (s) => (session = s) },
  )
  await got
  ;(session as ReplicationSession | null)?.stop()
  await done
  return msgs
}
