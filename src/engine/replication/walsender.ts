// The walsender's commands and its stream, as the engine answers them: typed
// results and a StreamSink, never wire bytes (wire/walsender.ts turns these
// into protocol messages; the worker API returns them as they are). Every
// command is answered from the engine's own state: none needs the backend,
// which another session's open transaction may hold.
// Spec: PostgreSQL docs, "Streaming Replication Protocol".

import type { PGlite } from '@electric-sql/pglite'
import { INT4_FIELD, TEXT_FIELD, type FieldDescription } from '../../protocol/backend'
import { PgError, SqlState } from '../../protocol/errors'
import { formatLsn, type Lsn } from '../../protocol/lsn'
import { backendOf } from '../backend/backend'
import { isChangeTrackingInstalled } from '../install'
import { parseReplicationCommand, type ReplicationCommand } from './commands'
import { BUSY, whenIdle } from './exclusive'
import { committedPosition } from './notifier'
import { positionLsn } from './positions'
import { schedulePrune } from './prune'
import { missingPublication, noSuchPublication } from './publications'
import { ReplicationSession, type DurabilityGate, type StreamSink } from './session'
import { isSlotActive, slotActivePid, slotInUse, slotReleased, unknownSlot } from './slots'
import { parseStartOptions, type StartOptions } from './start-options'
import type { OutputStyle } from './output-style'

/** The system identifier IDENTIFY_SYSTEM reports (stable; PGlite has no control file id). */
export const SYSTEM_ID = '1234567890'

/** The process id of the worker API and other callers without a wire session (pg_replication_slots.active_pid). */
export const API_PID = 1

/** A command's answer: a result set (fields empty for a bare CommandComplete). */
export interface CommandResult {
  fields: FieldDescription[]
  rows: (string | null)[][]
  commandTag: string
}

/** Who runs a command: what a walsender session knows about itself. */
export interface CommandContext {
  /** The session's process id (active_pid of what it streams). */
  pid?: number
  /** SHOW's answer from the session's own settings; without one, the server's. */
  show?: (name: string) => string
  /** A slot exported its snapshot (CREATE_REPLICATION_SLOT's default): the name to report, or null. */
  exportSnapshot?: (slot: string, consistentPoint: Lsn) => string | null
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
export function showSetting(db: PGlite, name: string): string {
  if (name.toLowerCase() === 'wal_level') return 'logical'
  const { gucs } = backendOf(db)
  const def = gucs.get(name)
  if (!def) throw new PgError({ code: SqlState.undefinedObject, message: `unrecognized configuration parameter "${name}"` })
  return gucs.show(name, def.boot)
}

const text = (names: string[]): FieldDescription[] => names.map((name) => ({ name, ...TEXT_FIELD }))
const done = (commandTag: string): CommandResult => ({ fields: [], rows: [], commandTag })

/** Runs a walsender command other than START_REPLICATION; errors throw PgError. */
export async function runReplicationCommand(cmd: ReplicationCommand | string, db: PGlite, ctx: CommandContext = {}): Promise<CommandResult> {
  if (typeof cmd === 'string') cmd = parseReplicationCommand(cmd)
  requireTracking(db)
  switch (cmd.kind) {
    case 'IDENTIFY_SYSTEM': {
      const xlogpos = formatLsn(positionLsn(committedPosition(db)))
      return {
        fields: [{ name: 'systemid', ...TEXT_FIELD }, { name: 'timeline', ...INT4_FIELD }, { name: 'xlogpos', ...TEXT_FIELD }, { name: 'dbname', ...TEXT_FIELD }],
        rows: [[SYSTEM_ID, '1', xlogpos, backendOf(db).database]],
        commandTag: 'IDENTIFY_SYSTEM',
      }
    }
    case 'SHOW': {
      const value = ctx.show ? ctx.show(cmd.name) : showSetting(db, cmd.name)
      return { fields: text([cmd.name]), rows: [[value]], commandTag: 'SHOW' }
    }
    case 'CREATE_REPLICATION_SLOT': {
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
      const snapshot = cmd.snapshot === 'export' ? (ctx.exportSnapshot?.(cmd.slot, at) ?? null) : null
      return {
        fields: text(['slot_name', 'consistent_point', 'snapshot_name', 'output_plugin']),
        rows: [[cmd.slot, formatLsn(at), snapshot, 'pgoutput']],
        commandTag: 'CREATE_REPLICATION_SLOT',
      }
    }
    case 'DROP_REPLICATION_SLOT': {
      const slots = backendOf(db).slots
      if (!slots.get(cmd.slot)) throw unknownSlot(cmd.slot)
      if (isSlotActive(db, cmd.slot)) {
        if (!cmd.wait) throw slotInUse(cmd.slot, slotActivePid(db, cmd.slot))
        await slotReleased(db, cmd.slot)
      }
      slots.drop(cmd.slot)
      // The dropped slot may have held the pruning horizon back.
      schedulePrune(db)
      return done('DROP_REPLICATION_SLOT')
    }
    case 'READ_REPLICATION_SLOT': {
      // PostgreSQL 15 answers physical slots only: a row of NULLs for an unknown name.
      if (backendOf(db).slots.get(cmd.slot)) {
        throw new PgError({ code: SqlState.featureNotSupported, message: 'cannot use READ_REPLICATION_SLOT with a logical replication slot' })
      }
      return {
        fields: [{ name: 'slot_type', ...TEXT_FIELD }, { name: 'restart_lsn', ...TEXT_FIELD }, { name: 'restart_tli', ...INT4_FIELD }],
        rows: [[null, null, null]],
        commandTag: 'READ_REPLICATION_SLOT',
      }
    }
    case 'START_REPLICATION':
      throw new PgError({ code: SqlState.protocolViolation, message: 'START_REPLICATION streams: use startReplication' })
    default:
      throw new PgError({ code: SqlState.featureNotSupported, message: `${cmd.kind} is not supported by tabgres` })
  }
}

/** What a stream reads: a slot, where to start, and its parsed options. */
export interface StreamRequest {
  slot: string
  startLsn: Lsn
  options: StartOptions
}

export interface StreamOptions {
  keepaliveMs?: number
  /** logical_decoding_work_mem in bytes: where a streaming consumer's large transactions are cut (default 64MB). */
  logicalDecodingWorkMem?: number
  /** The walsender connection's output settings, when they print values differently (./output-style.ts). */
  outputStyle?: OutputStyle | null
  /** Stream only durable commits (see DurabilityGate). */
  durability?: DurabilityGate
  /** The streaming session's process id (pg_replication_slots.active_pid); the worker API's by default. */
  pid?: number
}

/** PostgreSQL's default logical_decoding_work_mem, 64MB. */
const DEFAULT_LOGICAL_DECODING_WORK_MEM = 64 * 1024 * 1024

/** START_REPLICATION's text as a StreamRequest, as a PostgreSQL walsender parses it. */
export function streamRequest(query: string): StreamRequest {
  const cmd = parseReplicationCommand(query)
  if (cmd.kind !== 'START_REPLICATION') {
    throw new PgError({ code: SqlState.syntaxError, message: `expected START_REPLICATION, got ${cmd.kind}` })
  }
  if (cmd.physical || cmd.slot === null) {
    throw new PgError({ code: SqlState.featureNotSupported, message: 'physical replication is not supported by tabgres' })
  }
  return { slot: cmd.slot, startLsn: cmd.startLsn, options: parseStartOptions(cmd.options) }
}

/**
 * Starts a stream: calls sink.start() and returns the session, whose frames
 * then go to the sink until the client ends the copy, the session is stopped
 * or the database closes (`session.done`; sink.end says how). A stream that
 * cannot start throws its PgError and the sink hears nothing.
 */
export async function startReplication(db: PGlite, request: StreamRequest | string, sink: StreamSink, options: StreamOptions = {}): Promise<ReplicationSession> {
  requireTracking(db)
  const { slot: slotName, startLsn, options: start } = typeof request === 'string' ? streamRequest(request) : request
  const slot = backendOf(db).slots.get(slotName)
  if (!slot) throw unknownSlot(slotName)
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
  sink.start()
  return new ReplicationSession(db, sink, {
    slot: slotName,
    pid: options.pid ?? API_PID,
    temporarySlot: slot.temporary,
    startLsn,
    confirmedFlush: slot.confirmedFlush,
    publications: start.publications,
    verifyPublications: verify,
    messages: start.messages,
    binary: start.binary,
    outputStyle: options.outputStyle,
    streamAt: start.streaming === 'off' ? undefined : options.logicalDecodingWorkMem || DEFAULT_LOGICAL_DECODING_WORK_MEM,
    keepaliveMs: options.keepaliveMs,
    durability: options.durability,
  })
}
