// A replication stream's wire messages onto a MessagePort (see
// ../../shared/stream-port.ts): CopyData messages are batched, one
// postMessage per burst with every buffer transferred, and held back once the
// page has a window's worth of unconsumed bytes (the session then waits in
// drain(), so a slow page never makes the worker buffer without bound).

import { PgError } from '../../protocol/errors'
import { decodeBackendMessages } from '../../protocol/backend-decode'
import { DEFAULT_STREAM_WINDOW, type WorkerToPage } from '../../protocol/stream-port'
import type { ReplicationWriter } from '../../engine/replication/session'

const COPY_DATA = 0x64 // 'd'
const COPY_DONE = 0x63 // 'c'
const COPY_BOTH_RESPONSE = 0x57 // 'W'
const ERROR_RESPONSE = 0x45 // 'E'

export class PortWriter implements ReplicationWriter {
  private batch: ArrayBuffer[] = []
  private batchBytes = 0
  private scheduled = false
  /** Bytes posted and not yet credited by the page. */
  private outstanding = 0
  private creditWaiters: (() => void)[] = []
  private closed = false
  /** Settles when the stream starts (CopyBothResponse) or fails before starting. */
  readonly started: Promise<void>
  private resolveStarted!: () => void
  private rejectStarted!: (e: PgError) => void
  /** What was posted, for diagnostics: `detached` counts buffers the transfer emptied here. */
  posted = { messages: 0, frames: 0, bytes: 0, detached: 0, maxBuffered: 0 }

  constructor(
    private readonly port: MessagePort,
    private readonly window = DEFAULT_STREAM_WINDOW,
  ) {
    this.started = new Promise((resolve, reject) => {
      this.resolveStarted = resolve
      this.rejectStarted = reject
    })
    this.started.catch(() => {})
  }

  write(data: Uint8Array): void {
    if (this.closed) return
    switch (data[0]) {
      case COPY_DATA: {
        // Transfer needs a buffer of its own: the session's frames are fresh
        // copies (ByteWriter.toBytes), so this is usually the same buffer.
        const own = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength
        const buffer = (own ? data.buffer : data.slice().buffer) as ArrayBuffer
        this.batch.push(buffer)
        this.batchBytes += buffer.byteLength
        if (this.buffered > this.posted.maxBuffered) this.posted.maxBuffered = this.buffered
        this.schedule()
        return
      }
      case COPY_BOTH_RESPONSE:
        this.resolveStarted()
        return
      case COPY_DONE:
        this.end({ type: 'end' })
        return
      case ERROR_RESPONSE: {
        const [m] = decodeBackendMessages(data)
        const error = m.tag === 'E' ? m.fields : { code: 'XX000', message: 'unreadable error' }
        this.rejectStarted(new PgError(error))
        this.end({ type: 'error', error })
        return
      }
      default:
        // CommandComplete after CopyDone: the stream already ended.
        return
    }
  }

  drain(): Promise<void> | void {
    if (this.closed || this.outstanding + this.batchBytes < this.window) return
    return new Promise((resolve) => this.creditWaiters.push(resolve))
  }

  /** The page consumed `bytes`. */
  credit(bytes: number): void {
    this.outstanding = Math.max(0, this.outstanding - bytes)
    if (this.outstanding + this.batchBytes < this.window) this.wakeWaiters()
  }

  /** End the stream with an error (e.g. a malformed message from the page). */
  fail(error: PgError): void {
    this.rejectStarted(error)
    this.end({ type: 'error', error: error.toFields() })
  }

  /** The stream ended without a CopyDone from the engine (stop, database closed). */
  finish(): void {
    this.end({ type: 'end' })
  }

  private end(last: WorkerToPage): void {
    if (this.closed) return
    this.flush()
    this.closed = true
    this.port.postMessage(last)
    this.wakeWaiters()
  }

  private wakeWaiters(): void {
    for (const w of this.creditWaiters.splice(0)) w()
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    // The session writes a whole batch synchronously: one post carries it all.
    queueMicrotask(() => {
      this.scheduled = false
      this.flush()
    })
  }

  /** Posts the open batch now (also what the scheduled microtask does). */
  flush(): void {
    if (this.batch.length === 0 || this.closed) return
    const buffers = this.batch
    const message: WorkerToPage = { type: 'frames', buffers }
    this.outstanding += this.batchBytes
    this.posted.messages++
    this.posted.frames += buffers.length
    this.posted.bytes += this.batchBytes
    this.batch = []
    this.batchBytes = 0
    this.port.postMessage(message, buffers)
    for (const b of buffers) if (b.byteLength === 0) this.posted.detached++
  }

  /** Bytes this side holds for the page: posted but not credited, plus the open batch. */
  get buffered(): number {
    return this.outstanding + this.batchBytes
  }
}
