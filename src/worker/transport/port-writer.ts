// A replication stream onto a MessagePort (see ../../protocol/stream-port.ts):
// its CopyData frames are batched, one postMessage per burst carrying them
// back to back in one transferred buffer (Chromium pays per transferred
// buffer: 10,000 frames of 80 bytes took 48 ms to post one buffer each, 1.2 ms
// as one), and held back once the page has a window's worth of
// unconsumed bytes (the session then waits in drain(), so a slow page never
// makes the worker buffer without bound).

import { concatBytes } from '../../protocol/backend'
import { PgError } from '../../protocol/errors'
import { DEFAULT_STREAM_WINDOW, type WorkerToPage } from '../../protocol/stream-port'
import type { StreamOutcome, StreamSink } from '../../engine/replication/session'

export class PortWriter implements StreamSink {
  private batch: Uint8Array[] = []
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
  /** What was posted, for diagnostics: `detached` counts posted buffers the transfer emptied here. */
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

  start(): void {
    this.resolveStarted()
  }

  frame(data: Uint8Array): void {
    if (this.closed) return
    // Kept as given until the burst is posted: flush() copies it out.
    this.batch.push(data)
    this.batchBytes += data.byteLength
    if (this.buffered > this.posted.maxBuffered) this.posted.maxBuffered = this.buffered
    this.schedule()
  }

  end(outcome: StreamOutcome): void {
    if (outcome.kind === 'error') this.fail(new PgError(outcome.error))
    else this.post({ type: 'end' })
  }

  drain(): Promise<void> | void {
    if (this.closed || this.outstanding + this.batchBytes < this.window) return
    return new Promise((resolve) => this.creditWaiters.push(resolve))
  }

  room(): number {
    return Math.max(0, this.window - this.outstanding - this.batchBytes)
  }

  /** The page consumed `bytes`. */
  credit(bytes: number): void {
    this.outstanding = Math.max(0, this.outstanding - bytes)
    if (this.outstanding + this.batchBytes < this.window) this.wakeWaiters()
  }

  /** End the stream with an error (a failed start, a malformed message from the page). */
  fail(error: PgError): void {
    this.rejectStarted(error)
    this.post({ type: 'error', error: error.toFields() })
  }

  /** Posts nothing more, not even an end (a handover: the page's Database re-attaches the stream elsewhere). */
  detach(): void {
    this.closed = true
    this.batch = []
    this.batchBytes = 0
    this.wakeWaiters()
  }

  /** The stream's last message to the page; nothing follows it. */
  private post(last: WorkerToPage): void {
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
    // A fresh buffer of exactly the burst (concatBytes), so it can be transferred whole.
    const buffer = concatBytes(this.batch).buffer as ArrayBuffer
    const message: WorkerToPage = { type: 'frames', buffer }
    this.outstanding += this.batchBytes
    this.posted.messages++
    this.posted.frames += this.batch.length
    this.posted.bytes += this.batchBytes
    this.batch = []
    this.batchBytes = 0
    this.port.postMessage(message, [buffer])
    if (buffer.byteLength === 0) this.posted.detached++
  }

  /** Bytes this side holds for the page: posted but not credited, plus the open batch. */
  get buffered(): number {
    return this.outstanding + this.batchBytes
  }
}
