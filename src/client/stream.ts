// The page's end of a replication stream (see protocol/stream-port.ts): raw
// CopyData frames as they arrive, decoded messages, acknowledgements.

import { PgError } from '../protocol/errors'
import type { Lsn } from '../protocol/lsn'
import type { PgoutputMessage } from '../protocol/pgoutput'
import { decodeFrame, encodeFrame, FrameTag } from '../protocol/replication-frames'
import { pgTimestampFromDate } from '../protocol/pgoutput'
import { DEFAULT_STREAM_WINDOW, type PageToWorker, type WorkerToPage } from '../protocol/stream-port'
import { decodePgoutput } from '../protocol/pgoutput-decode'

/** What messages() yields: pgoutput messages with their WAL position, and keepalives. */
export type StreamMessage =
  | { kind: 'xlog'; walStart: Lsn; walEnd: Lsn; message: PgoutputMessage; /** the message's pgoutput bytes */ data: Uint8Array }
  | { kind: 'keepalive'; walEnd: Lsn; replyRequested: boolean }

/** CopyData wire header: 'd' and an int32 length. */
const COPY_DATA_HEADER = 5
/** Primary keepalive message: 'k', walEnd (8), clock (8), then the reply-requested byte. */
const KEEPALIVE_REPLY_OFFSET = COPY_DATA_HEADER + 1 + 8 + 8

export class ReplicationStream {
  private queue: Uint8Array[] = []
  private waiter: (() => void) | null = null
  private ended = false
  private error: PgError | null = null
  private consumed = 0
  private iterating = false
  /** The highest position acknowledged so far: the reply to a keepalive that asks for one. */
  private acked: Lsn = 0n
  /** Resolves when the worker has ended the stream. */
  readonly closed: Promise<void>
  private resolveClosed!: () => void

  constructor(
    private readonly port: MessagePort,
    readonly window = DEFAULT_STREAM_WINDOW,
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
    port.onmessage = (ev: MessageEvent<WorkerToPage>) => this.onMessage(ev.data)
  }

  private onMessage(m: WorkerToPage): void {
    if (m.type === 'frames') {
      for (const b of m.buffers) {
        const frame = new Uint8Array(b)
        // A keepalive that asks for a reply (the worker does so when the
        // consumer has been silent, and before it closes) is answered at once
        // with what was acknowledged, as a PostgreSQL client answers, however
        // far behind the consumer's reading is.
        if (frame[COPY_DATA_HEADER] === FrameTag.Keepalive && frame[KEEPALIVE_REPLY_OFFSET] === 1) this.ack(this.acked)
        this.queue.push(frame)
      }
    } else {
      if (m.type === 'error') this.error = new PgError(m.error)
      this.ended = true
      this.resolveClosed()
      this.port.close()
    }
    const w = this.waiter
    this.waiter = null
    w?.()
  }

  private send(m: PageToWorker, transfer: Transferable[] = []): void {
    if (!this.ended) this.port.postMessage(m, transfer)
  }

  /** Raw CopyData wire messages ('d', length, XLogData or keepalive), in order. */
  frames(): AsyncGenerator<Uint8Array> {
    return this.iterate((raw) => raw)
  }

  /** Decoded: each XLogData's pgoutput message with its position, and keepalives. */
  messages(): AsyncGenerator<StreamMessage> {
    return this.iterate(decodeMessage)
  }

  /**
   * The one loop over arriving frames behind frames() and messages(): a
   * single generator (decoding is a plain call, not a second generator
   * wrapped around the first), so a frame reaches the consumer in a few
   * microtasks. `map` returns undefined for a frame it skips.
   */
  private async *iterate<T>(map: (raw: Uint8Array) => T | undefined): AsyncGenerator<T> {
    if (this.iterating) throw new Error('a replication stream can be iterated only once')
    this.iterating = true
    for (;;) {
      const f = this.queue.shift()
      if (f) {
        this.consumed += f.byteLength
        // Return credit in chunks: a quarter window at a time.
        if (this.consumed >= this.window / 4) {
          this.send({ type: 'credit', bytes: this.consumed })
          this.consumed = 0
        }
        const item = map(f)
        if (item !== undefined) yield item
        continue
      }
      if (this.ended) {
        if (this.error) throw this.error
        return
      }
      await new Promise<void>((r) => (this.waiter = r))
    }
  }

  /**
   * Acknowledge: everything up to `lsn` is applied and flushed by the
   * consumer (a standby status update). The slot will not send it again.
   */
  ack(lsn: Lsn, replyRequested = false): void {
    if (lsn > this.acked) this.acked = lsn
    const bytes = encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: pgTimestampFromDate(Date.now()), replyRequested })
    const buffer = bytes.buffer as ArrayBuffer
    this.send({ type: 'copy-data', buffer }, [buffer])
  }

  /** CopyDone: the worker persists the last acknowledgement and ends the stream. */
  async close(): Promise<void> {
    this.send({ type: 'copy-done' })
    await this.closed
  }
}

function decodeMessage(raw: Uint8Array): StreamMessage | undefined {
  const f = decodeFrame(raw.subarray(COPY_DATA_HEADER))
  if (f.tag === 'w') return { kind: 'xlog', walStart: f.walStart, walEnd: f.walEnd, message: decodePgoutput(f.data), data: f.data }
  if (f.tag === 'k') return { kind: 'keepalive', walEnd: f.walEnd, replyRequested: f.replyRequested }
  return undefined
}
