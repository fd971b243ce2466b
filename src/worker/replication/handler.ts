// The walsender command handler: replication commands in, wire-protocol bytes out.
// Transport-agnostic: a Node test, a MessagePort or a TCP socket carries the bytes.
// Spec: PostgreSQL docs, "Streaming Replication Protocol".

import type { PGlite } from '@electric-sql/pglite'
import { protocol } from '@electric-sql/pglite'
import { PgError, SqlState, toPgError } from '../../shared/errors'
import { formatLsn, type Lsn } from '../../shared/lsn'
import {
  INT4_FIELD,
  TEXT_FIELD,
  commandComplete,
  concatBytes,
  copyBothResponse,
  errorResponse,
  resultSet,
} from '../wire/backend'
import { isChangeTrackingInstalled } from './change-tracker'
import { parseReplicationCommand, isReplicationCommand, type ReplicationCommand } from './commands'
import { idle, literal } from './exclusive'
import { positionLsn } from './positions'
import { ReplicationSession, type DurabilityGate, type ReplicationWriter, type StreamOptions } from './session'
import { readPosition } from './reader'
import { deleteSlot, insertSlot, isSlotActive, readSlot, slotInUse, slotReleased, unknownSlot } from './slots'
import { schedulePrune } from './prune'
import { parseStartOptions } from './start-options'

export type { DurabilityGate, ReplicationWriter } from './session'
export { ReplicationSession } from './session'

/** The system identifier IDENTIFY_SYSTEM reports (stable; PGlite has no control file id). */
export const SYSTEM_ID = '1234567890'

async function currentPosition(db: PGlite): Promise<Lsn> {
  return positionLsn(await idle(db, readPosition))
}

function requireTracking(db: PGlite): void {
  if (!isChangeTrackingInstalled(db)) {
    throw new PgError({
      code: SqlState.objectNotInPrerequisiteState,
      message: 'change tracking is not installed on this database',
      hint: 'Call installChangeTracking(db) first.',
    })
  }
}

/** Settings a replication client may SHOW, as a PostgreSQL 15 walsender reports them. */
async function showSetting(db: PGlite, name: string): Promise<string> {
  if (name === 'wal_level') return 'logical'
  const rows = await idle(db, (s) => s.query(`SELECT pg_catalog.current_setting(${literal(name)}, true)`))
  const v = rows[0]?.[0]
  if (v === null || v === undefined) {
    throw new PgError({ code: SqlState.undefinedObject, message: `unrecognized configuration parameter "${name}"` })
  }
  return v
}

export type CompatibilityMode = 'postgres' | 'orez'

async function runCommand(cmd: ReplicationCommand, db: PGlite, mode: CompatibilityMode): Promise<Uint8Array[]> {
  switch (cmd.kind) {
    case 'IDENTIFY_SYSTEM': {
      const { rows } = await db.query<{ db: string }>('SELECT current_database() AS db')
      const xlogpos = formatLsn(await currentPosition(db))
      return resultSet(
        [
          { name: 'systemid', ...TEXT_FIELD },
          { name: 'timeline', ...INT4_FIELD },
          { name: 'xlogpos', ...TEXT_FIELD },
          { name: 'dbname', ...TEXT_FIELD },
        ],
        [[SYSTEM_ID, '1', xlogpos, rows[0].db]],
        'IDENTIFY_SYSTEM',
      )
    }
    case 'SHOW':
      return resultSet([{ name: cmd.name, ...TEXT_FIELD }], [[await showSetting(db, cmd.name)]], 'SHOW')
    case 'CREATE_REPLICATION_SLOT': {
      requireTracking(db)
      if (cmd.physical) {
        throw new PgError({ code: SqlState.featureNotSupported, message: 'physical replication slots are not supported by tabgres' })
      }
      if (cmd.plugin !== 'pgoutput') {
        throw new PgError({
          code: SqlState.featureNotSupported,
          message: `logical decoding output plugin "${cmd.plugin}" is not supported`,
          hint: 'tabgres implements the pgoutput plugin.',
        })
      }
      const at = await idle(
        db,
        async (s) => {
          const pos = positionLsn(await readPosition(s))
          await insertSlot(s, cmd.slot, cmd.temporary, pos)
          return pos
        },
        true,
      )
      // tabgres has one backend, so every later read sees the slot's consistent
      // point; the snapshot name is reported for protocol compatibility.
      let snapshot: string | null =
        cmd.snapshot === 'export' ? `00000001-${(at & 0xffffffffn).toString(16).toUpperCase().padStart(8, '0')}-1` : null
      // orez answered every slot with a snapshot name; its clients read no NULL here.
      if (snapshot === null && mode === 'orez') snapshot = ''
      return resultSet(
        ['slot_name', 'consistent_point', 'snapshot_name', 'output_plugin'].map((name) => ({ name, ...TEXT_FIELD })),
        [[cmd.slot, formatLsn(at), snapshot, 'pgoutput']],
        'CREATE_REPLICATION_SLOT',
      )
    }
    case 'DROP_REPLICATION_SLOT': {
      requireTracking(db)
      if (isSlotActive(db, cmd.slot)) {
        if (!cmd.wait) throw slotInUse(cmd.slot)
        await slotReleased(db, cmd.slot)
      }
      const dropped = await idle(db, (s) => deleteSlot(s, cmd.slot), true)
      if (!dropped) throw unknownSlot(cmd.slot)
      // The dropped slot may have held the pruning horizon back.
      schedulePrune(db)
      return [commandComplete('DROP_REPLICATION_SLOT')]
    }
    case 'START_REPLICATION':
      throw new PgError({ code: SqlState.protocolViolation, message: 'START_REPLICATION must be run with handleStartReplication' })
    default:
      throw new PgError({ code: SqlState.featureNotSupported, message: `${cmd.kind} is not supported by tabgres` })
  }
}

/**
 * Answers a query received on a replication connection. `mode` 'orez' (the
 * default, this function's original contract) differs from PostgreSQL in one
 * place: a slot created without a snapshot reports snapshot_name '' not NULL.
 * Returns the complete response (without ReadyForQuery), an ErrorResponse for
 * a failed command, or null when the query is ordinary SQL for PGlite to run.
 */
export async function handleReplicationQuery(
  query: string,
  db: PGlite,
  options: { mode?: CompatibilityMode } = {},
): Promise<Uint8Array | null> {
  try {
    if (isReplicationCommand(query)) {
      return concatBytes(await runCommand(parseReplicationCommand(query), db, options.mode ?? 'orez'))
    }
    // Role attributes have no meaning in a single-user embedded database.
    if (/^\s*ALTER\s+(ROLE|USER)\s+\S+\s+(NO)?REPLICATION\s*;?\s*$/i.test(query)) {
      return commandComplete('ALTER ROLE')
    }
    // Consumers check wal_level; the SQL shim answers 'logical' as PostgreSQL's result set.
    if (/current_setting\s*\(\s*'wal_level'/i.test(query) && isChangeTrackingInstalled(db)) {
      return await runSql(query, db)
    }
    return null
  } catch (e) {
    return errorResponse(toPgError(e))
  }
}

/** Run SQL in PGlite and return its wire response up to (not including) ReadyForQuery. */
async function runSql(query: string, db: PGlite): Promise<Uint8Array> {
  return idle(db, async () => {
    const out = await db.execProtocolRaw(protocol.serialize.query(query), { syncToFs: false })
    // The final message is ReadyForQuery (5 bytes plus tag); its status is the last byte.
    const reply = out.subarray(0, out.length - 6).slice()
    if (out[out.length - 1] === 0x49 /* I */) return reply
    // This call has no session to keep a transaction block in: left open, it
    // would hold PGlite's one backend and stall every later engine query.
    await db.execProtocolRaw(protocol.serialize.query('ROLLBACK'), { syncToFs: false })
    const err = new PgError({ code: SqlState.featureNotSupported, message: 'a transaction block cannot stay open after this query; it was rolled back' })
    return concatBytes([reply, errorResponse(err)])
  })
}

export interface StartReplicationOptions {
  /**
   * 'postgres' (the default for wire sessions) answers like a PostgreSQL walsender:
   * unknown slots and missing options are errors. 'orez' keeps the ancestor's
   * leniency for this function's original contract: an unknown slot streams as a
   * temporary slot, and without options every table streams with proto_version 1.
   */
  mode?: CompatibilityMode
  keepaliveMs?: number
  /** Stream only durable commits (see DurabilityGate). */
  durability?: DurabilityGate
  /** Called with the session once streaming starts, to feed client CopyData/CopyDone. */
  onSession?: (session: ReplicationSession) => void
}

/**
 * Runs START_REPLICATION: writes CopyBothResponse, then the stream, until the
 * client ends the copy, the session is stopped or the database closes.
 * Errors are written as ErrorResponse and also reject the returned promise.
 */
export async function handleStartReplication(
  query: string,
  writer: ReplicationWriter,
  db: PGlite,
  options: StartReplicationOptions = {},
): Promise<void> {
  let session: ReplicationSession
  try {
    session = await startSession(query, writer, db, options)
  } catch (e) {
    const err = toPgError(e)
    writer.write(errorResponse(err))
    throw err
  }
  options.onSession?.(session)
  await session.done
}

async function startSession(
  query: string,
  writer: ReplicationWriter,
  db: PGlite,
  options: StartReplicationOptions,
): Promise<ReplicationSession> {
  const mode = options.mode ?? 'orez'
  requireTracking(db)
  const cmd = parseReplicationCommand(query)
  if (cmd.kind !== 'START_REPLICATION') {
    throw new PgError({ code: SqlState.syntaxError, message: `expected START_REPLICATION, got ${cmd.kind}` })
  }
  if (cmd.physical || cmd.slot === null) {
    throw new PgError({ code: SqlState.featureNotSupported, message: 'physical replication is not supported by tabgres' })
  }
  const slotName = cmd.slot
  const lenient = mode === 'orez'
  const start = parseStartOptions(cmd.options, lenient)
  const streamOpts = await idle(db, async (s): Promise<StreamOptions> => {
    let slot = await readSlot(s, slotName)
    if (!slot) {
      if (!lenient) throw unknownSlot(slotName)
      slot = await insertSlot(s, slotName, true, positionLsn(await readPosition(s)))
    }
    if (start.publications) {
      const rows = await s.query(
        `SELECT p FROM unnest(ARRAY[${start.publications.map(literal).join(',')}]::text[]) p WHERE p NOT IN (SELECT pubname FROM pg_publication)`,
      )
      if (rows.length) {
        throw new PgError({ code: SqlState.undefinedObject, message: `publication "${rows[0][0]}" does not exist` })
      }
    }
    return {
      slot: slotName,
      temporarySlot: slot.temporary,
      startLsn: cmd.startLsn,
      confirmedFlush: slot.confirmedFlush,
      publications: start.publications,
      messages: start.messages,
      keepaliveMs: options.keepaliveMs,
      durability: options.durability,
    }
  })
  if (isSlotActive(db, slotName)) throw slotInUse(slotName)
  writer.write(copyBothResponse())
  return new ReplicationSession(db, writer, streamOpts)
}
