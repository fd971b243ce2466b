// The README's "Using the engine (Node)" example, run by test/node/engine-entry.test.ts.
import { PGlite } from '@electric-sql/pglite'
import {
  decodeFrame,
  decodePgoutput,
  encodeFrame,
  installChangeTracking,
  pgTimestampFromDate,
  runReplicationCommand,
  startReplication,
  type PgoutputMessage,
  type StreamOutcome,
} from 'tabgres/engine'

export async function example(onMessage: (m: PgoutputMessage) => void): Promise<StreamOutcome> {
  const db = new PGlite()
  await installChangeTracking(db) // capture every user table, now and later
  await db.exec(`CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR ALL TABLES`)
  const slot = await runReplicationCommand('CREATE_REPLICATION_SLOT s LOGICAL pgoutput', db)
  console.log(slot.fields.map((f) => f.name), slot.rows[0]) // slot_name, consistent_point, snapshot_name, output_plugin

  let ended!: (outcome: StreamOutcome) => void
  const end = new Promise<StreamOutcome>((r) => (ended = r))
  const session = await startReplication(db, `START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', publication_names 'p')`, {
    start() {}, // the copy-both stream begins
    frame(copyData) {
      // One whole CopyData message: 'd', int32 length, then XLogData or a keepalive.
      const frame = decodeFrame(copyData.subarray(5))
      if (frame.tag !== 'w') return
      const m = decodePgoutput(frame.data)
      onMessage(m)
      if (m.tag === 'C') {
        // Applied: acknowledge (a standby status update); the slot will not send it again.
        const lsn = m.endLsn
        session.receive(encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: pgTimestampFromDate(Date.now()), replyRequested: false }))
        session.endCopy() // one transaction is enough here: end the stream as a client's CopyDone does
      }
    },
    end: (outcome) => ended(outcome), // copy-done, stopped, or an error with its SQLSTATE
  })
  await db.exec(`INSERT INTO t VALUES (1, 'a')`)
  const outcome = await end
  await session.done
  await db.close()
  return outcome
}
