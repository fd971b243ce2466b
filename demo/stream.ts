// `npm run demo` (for now, until the in-browser playground lands): an embedded
// in-memory tabgres engine, a replication slot, a few transactions, and the
// pgoutput stream they produce, decoded message by message.

import { PGlite } from '@electric-sql/pglite'
import { decodePgoutput } from '../src/protocol/pgoutput-decode'
import { formatLsn, parseLsn } from '../src/protocol/lsn'
import type { PgoutputMessage } from '../src/protocol/pgoutput'
import { decodeFrame } from '../src/protocol/replication-frames'
import { installChangeTracking } from '../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../src/wire/walsender'
import { type ReplicationSession } from '../src/engine/replication/session'

const db = new PGlite()
await installChangeTracking(db)
await db.exec(`
  CREATE TABLE todos (id serial PRIMARY KEY, title text NOT NULL, done boolean NOT NULL DEFAULT false, due date);
  CREATE PUBLICATION demo FOR ALL TABLES;
`)
await handleReplicationQuery('CREATE_REPLICATION_SLOT demo LOGICAL pgoutput', db)

function describe(m: PgoutputMessage): string {
  switch (m.tag) {
    case 'B':
      return `BEGIN     xid ${m.xid}, commits at ${formatLsn(m.finalLsn)}`
    case 'C':
      return `COMMIT    ${formatLsn(m.commitLsn)} .. ${formatLsn(m.endLsn)}`
    case 'R':
      return `RELATION  ${m.namespace}.${m.relation} (${m.columns.map((c) => `${c.flags ? '*' : ''}${c.name}:${c.typeOid}`).join(', ')}) identity ${m.replicaIdentity}`
    case 'I':
    case 'U':
    case 'D': {
      const t = (cols: { kind: string; value?: unknown }[]) => cols.map((c) => (c.kind === 't' ? JSON.stringify(c.value) : c.kind === 'n' ? 'NULL' : c.kind)).join(', ')
      const old = 'old' in m && m.old ? ` old ${m.old.kind}(${t(m.old.columns)})` : ''
      const nw = 'new' in m ? ` new (${t(m.new.columns)})` : ''
      return `${{ I: 'INSERT', U: 'UPDATE', D: 'DELETE' }[m.tag].padEnd(9)} ${old}${nw}`.replace(/  +/, ' ')
    }
    case 'M':
      return `MESSAGE   ${m.prefix}: ${new TextDecoder().decode(m.content)}`
    default:
      return m.tag
  }
}

let session!: ReplicationSession
let caughtUp: (lsn: bigint) => void = () => {}
let target = -1n
const done = handleStartReplication(
  `START_REPLICATION SLOT demo LOGICAL 0/0 (proto_version '1', publication_names 'demo', messages 'true')`,
  {
    write(bytes) {
      if (bytes[0] !== 0x64) return
      const f = decodeFrame(bytes.subarray(5))
      if (f.tag === 'w') console.log(`  ${formatLsn(f.walStart).padStart(10)}  ${describe(decodePgoutput(f.data))}`)
      else if (f.tag === 'k' && f.walEnd >= target) caughtUp(f.walEnd)
    },
  },
  db,
  { onSession: (s) => (session = s) },
)

async function step(title: string, sql: string, streams = true) {
  console.log(`\n${title}\n  > ${sql}`)
  await db.exec(sql)
  if (!streams) return
  const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
  target = parseLsn(lsn)!
  await new Promise<bigint>((r) => (caughtUp = r))
}

await step('An insert:', `INSERT INTO todos (title, due) VALUES ('try tabgres', '2026-12-24')`)
await step('A transaction of three statements:', `BEGIN; INSERT INTO todos (title) VALUES ('write a consumer'); UPDATE todos SET done = true WHERE id = 1; SELECT pg_logical_emit_message(true, 'demo', 'hello from SQL'); COMMIT`)
await step('A rolled-back transaction streams nothing:', `BEGIN; DELETE FROM todos; ROLLBACK`, false)
await step('A primary-key change and a delete:', `UPDATE todos SET id = 10 WHERE id = 2; DELETE FROM todos WHERE id = 1`)

session.stop()
await done
await db.close()
console.log('\nAny pgoutput consumer reads this stream; test/node/conformance-a.test.ts compares it with PostgreSQL 15.')
