// Messages on a replication stream's dedicated MessagePort.
//
// The worker sends CopyData wire messages ('d', int32 length, payload: an
// XLogData 'w' or keepalive 'k' frame) exactly as a walsender puts them on a
// socket: a burst of them back to back in one ArrayBuffer per postMessage,
// transferred (never structured-cloned); splitFrames() cuts them apart. The page returns credit as it consumes them:
// the worker never has more than the window outstanding (flow control).

import { forEachMessage } from './backend-decode'
import { PgError, SqlState, type PgErrorFields } from './errors'

export type WorkerToPage =
  /** Whole CopyData messages back to back. */
  | { type: 'frames'; buffer: ArrayBuffer }
  /** The stream ended (after CopyDone, a stop, or the database closing). */
  | { type: 'end' }
  | { type: 'error'; error: PgErrorFields }
  // From the Database that owns the stream (a stream whose database is held by
  // another tab, or whose holder may change: client/leadership.ts), on the
  // port it handed out. Frames come on a port of their own, straight from the
  // leading worker, so that a new leader's can replace a dead one's.
  /** Read frames from `port` from now on (and send credit and acknowledgements there). */
  | { type: 'attach'; port: MessagePort }
  /** The worker streaming went away: answer with where to resume. */
  | { type: 'detached' }

export type PageToWorker =
  /** The page consumed this many bytes of frames. */
  | { type: 'credit'; bytes: number }
  /** A CopyData payload from the client: a standby status update ('r'). */
  | { type: 'copy-data'; buffer: ArrayBuffer }
  /** CopyDone: finish as the walsender does. */
  | { type: 'copy-done' }
  /** The answer to 'detached', to the Database: restart after the last transaction received whole (X/Y). */
  | { type: 'resume'; lsn: string }
  /** The consumer's end of the stream closed (it ended): the Database forgets it. */
  | { type: 'ended' }

/** Bytes of frames the worker may have outstanding before it waits for credit. */
export const DEFAULT_STREAM_WINDOW = 4 * 1024 * 1024

/** The CopyData messages of a 'frames' buffer, as views into it (each 'd', int32 length, payload). */
export function splitFrames(buffer: ArrayBuffer): Uint8Array[] {
  const bytes = new Uint8Array(buffer)
  const frames: Uint8Array[] = []
  let bad = -1
  const end = forEachMessage(bytes, (tag, start, stop) => {
    if (tag !== 0x64 && bad < 0) bad = start
    frames.push(bytes.subarray(start, stop))
  })
  if (bad >= 0 || end !== bytes.length) {
    const at = bad >= 0 ? bad : end
    throw new PgError({ code: SqlState.protocolViolation, message: `malformed replication frames at byte ${at} of ${buffer.byteLength}` })
  }
  return frames
}
