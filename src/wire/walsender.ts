// The walsender adapter: the engine's replication results and streams as
// protocol messages. A wire session (./server-session.ts) and callers that
// want the walsender's bytes (tests, tools, the orez API) use it; the worker
// API takes the engine's typed results instead.
// Spec: PostgreSQL docs, "Streaming Replication Protocol".

import type { PGlite } from '@electric-sql/pglite'
import { commandComplete, concatBytes, copyBothResponse, copyDone, errorResponse, resultSet } from '../protocol/backend'
import { toPgError } from '../protocol/errors'
import { isReplicationCommand } from '../engine/replication/commands'
import type { StreamSink } from '../engine/replication/session'
import {
  runReplicationCommand,
  startReplication,
  type CommandContext,
  type CommandResult,
  type StreamOptions,
  type StreamRequest,
} from '../engine/replication/walsender'
import type { ReplicationSession } from '../engine/replication/session'

/** Where a walsender's messages go (a socket, a port, a test's recorder). */
export interface ReplicationWriter {
  write(data: Uint8Array): void
  drain?(): Promise<void> | void
  flush?(): void
}

/** A command's result as the messages a walsender sends (without ReadyForQuery). */
export function resultMessages(r: CommandResult): Uint8Array {
  return r.fields.length ? concatBytes(resultSet(r.fields, r.rows, r.commandTag)) : commandComplete(r.commandTag)
}

/**
 * Answers a replication command as a walsender: the complete response
 * without ReadyForQuery, or an ErrorResponse. null when the query is not a
 * replication command (ordinary SQL, for the backend).
 */
export async function handleReplicationQuery(query: string, db: PGlite, ctx: CommandContext = {}): Promise<Uint8Array | null> {
  if (!isReplicationCommand(query)) return null
  try {
    return resultMessages(await runReplicationCommand(query, db, ctx))
  } catch (e) {
    return errorResponse(toPgError(e))
  }
}

/**
 * The stream's sink as a walsender's messages: CopyBothResponse, the CopyData
 * frames, and at the end CopyDone and CommandComplete after the client's
 * CopyDone, or an ErrorResponse.
 */
export function walsenderSink(writer: ReplicationWriter): StreamSink {
  return {
    start: () => writer.write(copyBothResponse()),
    frame: (bytes) => writer.write(bytes),
    end(outcome) {
      if (outcome.kind === 'copy-done') {
        writer.write(copyDone())
        writer.write(commandComplete('COPY 0'))
      }
      else if (outcome.kind === 'error') writer.write(errorResponse(outcome.error))
    },
    drain: writer.drain && (() => writer.drain!()),
    flush: writer.flush && (() => writer.flush!()),
  }
}

export interface StartReplicationOptions extends StreamOptions {
  /** Called with the session once streaming starts, to feed client CopyData/CopyDone. */
  onSession?: (session: ReplicationSession) => void
}

/**
 * Runs START_REPLICATION as a walsender: CopyBothResponse, then the stream,
 * until the client ends the copy, the session is stopped or the database
 * closes. A failure is written as ErrorResponse and also rejects.
 */
export async function handleStartReplication(
  request: string | StreamRequest,
  writer: ReplicationWriter,
  db: PGlite,
  options: StartReplicationOptions = {},
): Promise<void> {
  let session: ReplicationSession
  try {
    session = await startReplication(db, request, walsenderSink(writer), options)
  } catch (e) {
    const err = toPgError(e)
    writer.write(errorResponse(err))
    throw err
  }
  options.onSession?.(session)
  await session.done
}
