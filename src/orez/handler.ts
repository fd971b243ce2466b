// orez compatibility: the ancestor's walsender handler (replication commands
// in, wire-protocol bytes out), kept for its clients and its tests
// (./handler.test.ts, byte for byte the ancestor's). It is the walsender
// adapter (wire/walsender.ts) with orez's leniency:
// - a slot created without an exported snapshot reports snapshot_name ''
//   (orez's clients read no NULL there);
// - START_REPLICATION of an unknown slot streams from a temporary slot, and
//   without options every table streams (proto_version 1);
// - `ALTER ROLE ... [NO]REPLICATION` succeeds and `current_setting('wal_level')`
//   is answered on a replication connection.

import type { PGlite } from '@electric-sql/pglite'
import { commandComplete, concatBytes, errorResponse, TransactionStatus } from '../protocol/backend'
import { query as queryMessage } from '../protocol/frontend'
import { PgError, SqlState, toPgError } from '../protocol/errors'
import { backendOf } from '../engine/backend/backend'
import { isChangeTrackingInstalled } from '../engine/install'
import { isReplicationCommand, parseReplicationCommand } from '../engine/replication/commands'
import { idle } from '../engine/replication/exclusive'
import { committedPosition } from '../engine/replication/notifier'
import { positionLsn } from '../engine/replication/positions'
import { parseStartOptions, type StartOptions } from '../engine/replication/start-options'
import { runReplicationCommand, streamRequest, type CommandContext, type StreamRequest } from '../engine/replication/walsender'
import {
  handleStartReplication as startStream,
  resultMessages,
  type ReplicationWriter,
  type StartReplicationOptions,
} from '../wire/walsender'

export type { ReplicationWriter } from '../wire/walsender'
export { ReplicationSession } from '../engine/replication/session'

export async function handleReplicationQuery(query: string, db: PGlite, ctx: CommandContext = {}): Promise<Uint8Array | null> {
  try {
    if (isReplicationCommand(query)) {
      const r = await runReplicationCommand(query, db, ctx)
      if (r.commandTag === 'CREATE_REPLICATION_SLOT' && r.rows[0][2] === null) r.rows[0][2] = ''
      return resultMessages(r)
    }
    // Role attributes have no meaning in a single-user embedded database.
    if (/^\s*ALTER\s+(ROLE|USER)\s+\S+\s+(NO)?REPLICATION\s*;?\s*$/i.test(query)) return commandComplete('ALTER ROLE')
    // Consumers check wal_level; the SQL shim answers 'logical' as PostgreSQL's result set.
    if (/current_setting\s*\(\s*'wal_level'/i.test(query) && isChangeTrackingInstalled(db)) return await runSql(query, db)
    return null
  } catch (e) {
    return errorResponse(toPgError(e))
  }
}

/** Run SQL in PGlite and return its wire response up to (not including) ReadyForQuery. */
async function runSql(query: string, db: PGlite): Promise<Uint8Array> {
  return idle(db, async () => {
    const out = await db.execProtocolRaw(queryMessage(query), { syncToFs: false })
    // The final message is ReadyForQuery (5 bytes plus tag); its status is the last byte.
    const reply = out.subarray(0, out.length - 6).slice()
    if (out[out.length - 1] === TransactionStatus.Idle) return reply
    // This call has no session to keep a transaction block in: left open, it
    // would hold PGlite's one backend and stall every later engine query.
    await db.execProtocolRaw(queryMessage('ROLLBACK'), { syncToFs: false })
    const err = new PgError({ code: SqlState.featureNotSupported, message: 'a transaction block cannot stay open after this query; it was rolled back' })
    return concatBytes([reply, errorResponse(err)])
  })
}

/** START_REPLICATION with orez's leniency (above); otherwise as a walsender. */
export async function handleStartReplication(query: string, writer: ReplicationWriter, db: PGlite, options: StartReplicationOptions = {}): Promise<void> {
  let request: StreamRequest | string = query
  try {
    request = lenientRequest(query, db)
  } catch {
    // Not lenient about this one: the walsender reports why.
  }
  return startStream(request, writer, db, options)
}

function lenientRequest(query: string, db: PGlite): StreamRequest {
  const cmd = parseReplicationCommand(query)
  if (cmd.kind !== 'START_REPLICATION' || cmd.physical || cmd.slot === null || !isChangeTrackingInstalled(db)) return streamRequest(query)
  const start = orezStartOptions(cmd.options)
  const slots = backendOf(db).slots
  if (!slots.get(cmd.slot)) slots.create(cmd.slot, true, positionLsn(committedPosition(db)))
  return { slot: cmd.slot, startLsn: cmd.startLsn, options: start }
}

/** START_REPLICATION's options as orez took them: none means protocol 1 and every table; without publication_names, every table. */
export function orezStartOptions(opts: Map<string, string | null>): StartOptions {
  if (opts.size === 0) return { protoVersion: 1, publications: null, messages: false, binary: false, streaming: 'off', twoPhase: false }
  if (opts.has('publication_names')) return parseStartOptions(opts)
  return { ...parseStartOptions(new Map([...opts, ['publication_names', '']])), publications: null }
}
