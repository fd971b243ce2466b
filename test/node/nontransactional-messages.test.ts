// Non-transactional logical decoding messages (pg_logical_emit_message(false,
// ...)) go out even when their transaction rolls back, as PostgreSQL's
// decoder sends them; a rollback wakes the stream on its own (no later commit
// needed); a committed transaction's message goes out ahead of its Begin; the
// files that keep them are pruned with the change log.

import { PGlite } from '@electric-sql/pglite'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installChangeTracking } from '../../src/engine/install'
import { pruneNow } from '../../src/engine/replication/prune'
import type { ReplicationSession } from '../../src/engine/replication/session'
import { listen, type TcpServer } from '../../src/node/server'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import type { PgoutputMessage } from '../../src/protocol/pgoutput'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { recordStream } from '../support/stream'

const text = new TextDecoder()

describe('non-transactional messages', () => {
  let db: PGlite
  let server: TcpServer
  let client: pg.Client
  let stream: ReturnType<typeof recordStream>
  let session: ReplicationSession
  let done: Promise<void>

  /** The pgoutput messages streamed so far. */
  const messages = (): PgoutputMessage[] => stream.frames.flatMap((f) => (f.tag === 'w' ? [decodePgoutput(f.data)] : []))
  const isMessage = (content: string) => (m: PgoutputMessage) => m.tag === 'M' && text.decode(m.content) === content
  const frameWith = (content: string) =>
    stream.waitFor((f) => f.tag === 'w' && isMessage(content)(decodePgoutput(f.data)))

  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR TABLE t`)
    await handleReplicationQuery(`CREATE_REPLICATION_SLOT "s" LOGICAL pgoutput`, db)
    stream = recordStream()
    done = handleStartReplication(`START_REPLICATION SLOT "s" LOGICAL 0/0 (proto_version '1', publication_names 'p', messages 'true')`, stream.writer, db, {
      onSession: (s) => (session = s),
    })
    await stream.waitFor((f) => f.tag === 'k')
    server = await listen(db)
    client = new pg.Client({ connectionString: `postgresql://postgres@127.0.0.1:${server.port}/postgres` })
    await client.connect()
  })

  afterAll(async () => {
    await client?.end()
    session?.stop()
    await done
    await server?.close()
    await db?.close()
  })

  it('one from a transaction that rolls back goes out, alone, with nothing else of that transaction and no commit after it', async () => {
    await client.query(`BEGIN; INSERT INTO t VALUES (1);
                        SELECT pg_logical_emit_message(false, 'pre', 'from a rolled-back transaction');
                        ROLLBACK`)
    // No later commit: the rollback's own wake-up sends it.
    await frameWith('from a rolled-back transaction')
    const sent = messages()
    expect(sent.map((m) => m.tag)).toEqual(['M'])
    expect(sent[0]).toMatchObject({ tag: 'M', flags: 0, prefix: 'pre' })
  })

  it("a committed transaction's goes out ahead of its Begin; a transactional one inside it", async () => {
    await client.query(`BEGIN; INSERT INTO t VALUES (2);
                        SELECT pg_logical_emit_message(true, 'tx', 'inside');
                        SELECT pg_logical_emit_message(false, 'now', 'ahead of begin');
                        COMMIT`)
    await stream.waitFor((f) => f.tag === 'w' && decodePgoutput(f.data).tag === 'C')
    const sent = messages().slice(1)
    expect(sent.map((m) => (m.tag === 'M' ? `M:${text.decode(m.content)}` : m.tag))).toEqual(['M:ahead of begin', 'B', 'R', 'I', 'M:inside', 'C'])
  })

  it('one emitted outside any transaction block, and one with a bytea payload, arrive byte for byte', async () => {
    await client.query(`SELECT pg_logical_emit_message(false, 'bin', '\\x00ff0a20'::bytea)`)
    const f = await stream.waitFor((f) => f.tag === 'w' && (decodePgoutput(f.data) as { prefix?: string }).prefix === 'bin')
    const m = decodePgoutput((f as { data: Uint8Array }).data)
    expect(m.tag === 'M' && Array.from(m.content)).toEqual([0x00, 0xff, 0x0a, 0x20])
  })

  it('the files that keep them are pruned once no slot needs them', async () => {
    const other = new PGlite()
    await installChangeTracking(other, { retention: 'discard' })
    await other.exec(`CREATE TABLE u (id int)`)
    await other.exec(`BEGIN; SELECT pg_logical_emit_message(false, 'p', 'x'); ROLLBACK`)
    const files = async () => (await other.query(`SELECT pg_ls_dir('pg_tabgres/messages', true, false) AS f`)).rows.length
    expect(await files()).toBe(1)
    await other.exec(`INSERT INTO u VALUES (1)`)
    await pruneNow(other)
    expect(await files()).toBe(0)
    await other.close()
  })
})
