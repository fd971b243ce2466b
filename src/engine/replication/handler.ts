// The walsender command handler: replication commands in, wire-protocol bytes out.
// Transport-agnostic: a Node test, a MessagePort or a TCP socket carries the bytes.
// Spec: PostgreSQL docs, "Streaming Replication Protocol".

import type { PGlite } from '@electric-sql/pglite'
import { protocol } from '@electric-sql/pglite'
import { PgError, SqlState, toPgError } from '../../protocol/errors'
import { formatLsn, type Lsn } from '../../protocol/lsn'
import {
  INT4_FIELD,
  TEXT_FIELD,
  commandComplete,
  concatBytes,
  copyBothResponse,
  errorResponse,
  resultSet,
} from '../../protocol/backend'
import { isChangeTrackingInstalled } from './change-tracker'
import { parseReplicationCommand, isReplicationCommand, type ReplicationCommand } from './commands'
import { BUSY, idle, literal, whenIdle, type IdleSession } from './exclusive'
import { committedPosition } from './notifier'
import { positionLsn } from './positions'
import { ReplicationSession, type DurabilityGate, type ReplicationWriter, type StreamOptions } from './session'
import { isSlotActive, slotActivePid, slotInUse, slotReleased, unknownSlot } from './slots'
import { backendOf } from '../backend/backend'
import { schedulePrune } from './prune'
import { parseStartOptions } from './start-options'

export type { DurabilityGate, ReplicationWriter } from './session'
export { ReplicationSession } from './session'

/** The system identifier IDENTIFY_SYSTEM reports (stable; PGlite has no control file id). */
export const SYSTEM_ID = '1234567890'

/** The process id of the worker API and other callers without a wire session (pg_replication_slots.active_pid). */
export const API_PID = 1

function requireTracking(db: PGlite): void {
  if (!isChangeTrackingInstalled(db)) {
    throw new PgError({
      code: SqlState.objectNotInPrerequisiteState,
      message: 'change tracking is not installed on this database',
      hint: 'Call installChangeTracking(db) first.',
    })
  }
}

export type CompatibilityMode = 'postgres' | 'orez'

/** Who runs a command: what a walsender session knows about itself. */
export interface CommandContext {
  mode?: CompatibilityMode
  /** The session's process id (active_pid of what it streams). */
  pid?: number
  /** SHOW's answer from the session's own settings; without one, the server's. */
  show?: (name: string) => string
  /** A slot exported its snapshot (CREATE_REPLICATION_SLOT's default): the name to report, or null. */
  exportSnapshot?: (slot: string, consistentPoint: Lsn) => string | null
}

/** Settings a replication client may SHOW, as a PostgreSQL 15 walsender reports them. */
export function showSetting(db: PGlite, name: string): string {
  if (name.toLowerCase() === 'wal_level') return 'logical'
  const { gucs } = backendOf(db)
  const def = gucs.get(name)
  if (!def) throw new PgError({ code: SqlState.undefinedObject, message: `unrecognized configuration parameter "${name}"` })
  return gucs.show(name, def.boot)
}

/**
 * Walsender commands, answered from the engine's own state: none of them
 * needs the backend, which another session's open transaction may hold.
 */
async function runCommand(cmd: ReplicationCommand, db: PGlite, ctx: CommandContext): Promise<Uint8Array[]> {
  const mode = ctx.mode ?? 'orez'
  switch (cmd.kind) {
    case 'IDENTIFY_SYSTEM': {
      requireTracking(db)
      const xlogpos = formatLsn(positionLsn(committedPosition(db)))
      return resultSet(
        [
          { name: 'systemid', ...TEXT_FIELD },
          { name: 'timeline', ...INT4_FIELD },
          { name: 'xlogpos', ...TEXT_FIELD },
          { name: 'dbname', ...TEXT_FIELD },
        ],
        [[SYSTEM_ID, '1', xlogpos, backendOf(db).database]],
        'IDENTIFY_SYSTEM',
      )
    }
    case 'SHOW': {
      requireTracking(db)
      const value = ctx.show ? ctx.show(cmd.name) : showSetting(db, cmd.name)
      return resultSet([{ name: cmd.name, ...TEXT_FIELD }], [[value]], 'SHOW')
    }
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
      // The consistent point is the committed position: whatever transaction
      // is open now (and holds the backend) commits above it and is streamed.
      const at = positionLsn(committedPosition(db))
      backendOf(db).slots.create(cmd.slot, cmd.temporary, at)
      let snapshot: string | null = cmd.snapshot === 'export' ? (ctx.exportSnapshot?.(cmd.slot, at) ?? null) : null
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
      const slots = backendOf(db).slots
      if (!slots.get(cmd.slot)) throw unknownSlot(cmd.slot)
      if (isSlotActive(db, cmd.slot)) {
        if (!cmd.wait) throw slotInUse(cmd.slot, slotActivePid(db, cmd.slot))
        await slotReleased(db, cmd.slot)
      }
      slots.drop(cmd.slot)
      // The dropped slot may have held the pruning horizon back.
      schedulePrune(db)
      return [commandComplete('DROP_REPLICATION_SLOT')]
    }
    case 'READ_REPLICATION_SLOT': {
      requireTracking(db)
      // PostgreSQL 15 answers physical slots only: a row of NULLs for an unknown name.
      if (backendOf(db).slots.get(cmd.slot)) {
        throw new PgError({ code: SqlState.featureNotSupported, message: 'cannot use READ_REPLICATION_SLOT with a logical replication slot' })
      }
      return resultSet(
        [
          { name: 'slot_type', ...TEXT_FIELD },
          { name: 'restart_lsn', ...TEXT_FIELD },
          { name: 'restart_tli', ...INT4_FIELD },
        ],
        [[null, null, null]],
        'READ_REPLICATION_SLOT',
      )
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
  options: CommandContext = {},
): Promise<Uint8Array | null> {
  try {
    if (isReplicationCommand(query)) {
      return concatBytes(await runCommand(parseReplicationCommand(query), db, options))
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
  /** The streaming session's process id (pg_replication_slots.active_pid). */
  pid?: number
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
  const pid = options.pid ?? API_PID
  const store = backendOf(db).slots
  let slot = store.get(slotName)
  if (!slot) {
    if (!lenient) throw unknownSlot(slotName)
    slot = store.create(slotName, true, positionLsn(committedPosition(db)))
  }
  if (isSlotActive(db, slotName)) throw slotInUse(slotName, slotActivePid(db, slotName))
  // Unknown publications fail the command when the backend is free to say
  // so now; when another session holds it, the stream checks at its first
  // read instead (as PostgreSQL's pgoutput does, at the first change), so
  // the command itself never waits.
  let verify = start.publications
  if (verify) {
    const missing = await whenIdle(db, (s) => missingPublication(s, verify!))
    if (missing !== BUSY) {
      if (missing !== null) throw noSuchPublication(missing)
      verify = null
    }
  }
  writer.write(copyBothResponse())
  return new ReplicationSession(db, writer, {
    slot: slotName,
    pid,
    temporarySlot: slot.temporary,
    startLsn: cmd.startLsn,
    confirmedFlush: slot.confirmedFlush,
    publications: start.publications,
    verifyPublications: verify,
    messages: start.messages,
    keepaliveMs: options.keepaliveMs,
    durability: options.durability,
  })
}

export function noSuchPublication(name: string): PgError {
  return new PgError({ code: SqlState.undefinedObject, message: `publication "${name}" does not exist` })
}

/** The first of `names` that is not a publication, or null. */
export async function missingPublication(s: IdleSession, names: string[]): Promise<string | null> {
  const rows = await s.query(
    `SELECT p FROM unnest(ARRAY[${names.map(literal).join(',')}]::text[]) p WHERE p NOT IN (SELECT pubname FROM pg_publication)`,
  )
  return rows.length ? rows[0][0] : null
}
