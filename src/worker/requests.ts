// What the worker API's calls take and give that is more than a value: the
// structured START_REPLICATION and CREATE_REPLICATION_SLOT requests (names
// as given, never parsed as SQL), and a replication command's result.

import { PgError, SqlState } from '../protocol/errors'
import { parseLsn } from '../protocol/lsn'
import { truncateIdentifier } from '../engine/replication/commands'
import { parseStartOptions } from '../engine/replication/start-options'
import type { StreamRequest } from '../engine/replication/walsender'

export interface StartReplicationRequest {
  slot: string
  /** X/Y; default 0/0 (the slot's confirmed position). */
  startLsn?: string
  /** pgoutput options, e.g. { proto_version: '1', publication_names: 'p', messages: 'true' }. */
  options: Record<string, string>
  /** Flow-control window in bytes (default DEFAULT_STREAM_WINDOW). */
  window?: number
}

export interface CreateSlotRequest {
  temporary?: boolean
  snapshot?: 'export' | 'use' | 'nothing'
}

/** A replication command's result, as the page receives it. */
export interface CommandResult {
  columns: string[]
  rows: (string | null)[][]
  commandTag: string
}

/** A stream request from structured options: names as given (as quoted identifiers are), never parsed as SQL. */
export function streamRequestOf(req: StartReplicationRequest): StreamRequest {
  const lsn = req.startLsn ?? '0/0'
  const startLsn = parseLsn(lsn)
  if (startLsn === null) throw new PgError({ code: SqlState.syntaxError, message: `invalid LSN "${lsn}"` })
  const options = new Map(Object.entries(req.options).map(([k, v]) => [truncateIdentifier(k), String(v)]))
  return { slot: truncateIdentifier(req.slot), startLsn, options: parseStartOptions(options) }
}
