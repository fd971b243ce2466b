// The page's end of a replication stream (see protocol/stream-port.ts): raw
// CopyData frames as they arrive, decoded messages, acknowledgements.

import { PgError } from '../protocol/errors'
import { formatLsn, type Lsn } from '../protocol/lsn'
import type { PgoutputMessage } from '../protocol/pgoutput'
import { decodeFrame, encodeFrame, FrameTag } from '../protocol/replication-frames'
import { pgTimestampFromDate } from '../protocol/pgoutput'
import { DEFAULT_STREAM_WINDOW, splitFrames, type PageToWorker, type WorkerToPage } from '../protocol/stream-port'
import { PgoutputStreamDecoder } from '../protocol/pgoutput-decode'

/** What messages() yields: pgoutput messages with their WAL position, and keepalives. */
export type StreamMessage =
  | { kind: 'xlog'; walStart: Lsn; walEnd: Lsn; message: PgoutputMessage; /** the message's pgoutput bytes */ data: Uint8Array }
  | { kind: 'keepalive'; walEnd: Lsn; replyRequested: boolean }

/** CopyData wire header: 'd' and an int32 length. */
const COPY_DATA_HEADER = 5
/** Primary keepalive message: 'k', walEnd (8), clock (8), then the reply-requested byte. */
const KEEPALIVE_REPLY_OFFSET = COPY_DATA_HEADER + 1 + 8 + 8
/** XLogData: 'w', walStart (8), walEnd (8), clock (8), then the pgoutput message (its tag first). */
const PGOUTPUT_OFFSET = COPY_DATA_HEADER + 1 + 8 + 8 + 8

/**
 * Where the frames received so far leave off, in transactions: what a stream
 * re-attached to another worker resumes from (protocol/stream-port.ts,
 * 'detached'). Read from each message's tag and LSNs, not decoded.
 */
class ReceivedPosition {
  /** The end LSN of the last Commit received. */
  lastCommitEnd: Lsn = 0n
  /** The transaction received in part: its Begin's final LSN, and how many of its messages came (Relation and Type excepted). */
  partial: { finalLsn: Lsn; count: number } | null = null

  /** Counts `frame`; returns its pgoutput tag (0 for a keepalive). */
  see(frame: Uint8Array): number {
    if (frame[COPY_DATA_HEADER] !== FrameTag.XLogData) return 0
    const tag = frame[PGOUTPUT_OFFSET]
    const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength)
    if (tag === TAG_BEGIN) this.partial = { finalLsn: view.getBigUint64(PGOUTPUT_OFFSET + 1), count: 1 }
    else if (tag === TAG_COMMIT) {
      this.lastCommitEnd = view.getBigUint64(PGOUTPUT_OFFSET + 1 + 1 + 8)
      this.partial = null
    } else if (this.partial && counts(tag)) this.partial.count++
    return tag
  }
}

const TAG_BEGIN = 0x42 // 'B'
const TAG_COMMIT = 0x43 // 'C'
/** Relation and Type messages are sent again by a new stream wherever it first needs them: never counted, never skipped. */
const counts = (tag: number) => tag !== 0x52 && tag !== 0x59 // 'R', 'Y'

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
  /** Where frames come from and credit and acknowledgements go: `port` itself, or a port 'attach' gave. */
  private data: MessagePort
  private readonly received = new ReceivedPosition()
  /** After a re-attach: messages of the transaction received in part before, which come again. */
  private skip: { finalLsn: Lsn; remaining: number } | null = null
  /** Queued bytes that came from a previous attach: the new worker never sent them, so no credit for them. */
  private stale = 0

  /**
   * `port`: the stream's port, from Database.replicationPort (frames come
   * on ports it attaches, from whichever worker leads), or a worker's
   * stream port itself.
   */
  constructor(
    private readonly port: MessagePort,
    readonly window = DEFAULT_STREAM_WINDOW,
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
    this.data = port
    port.onmessage = (ev: MessageEvent<WorkerToPage>) => this.onMessage(ev.data)
  }

  private onMessage(m: WorkerToPage): void {
    if (this.ended) return
    if (m.type === 'attach') {
      if (this.data !== this.port) this.data.close()
      this.data = m.port
      this.data.onmessage = (ev: MessageEvent<WorkerToPage>) => this.onMessage(ev.data)
      this.stale = this.queue.reduce((n, f) => n + f.byteLength, 0)
      this.consumed = 0
      return
    }
    if (m.type === 'detached') {
      // Frames of the worker that went, still on their way, are dropped with
      // its port: what to resume from is what was received up to here. After
      // the last whole transaction; the part of the next one already received
      // comes again and is dropped.
      if (this.data !== this.port) this.data.close()
      const p = this.received.partial
      this.skip = p && { finalLsn: p.finalLsn, remaining: p.count }
      this.port.postMessage({ type: 'resume', lsn: formatLsn(this.received.lastCommitEnd) } satisfies PageToWorker)
      return
    }
    let frames: Uint8Array[] | null = null
    if (m.type === 'frames') {
      try {
        frames = splitFrames(m.buffer)
      } catch (e) {
        // Never from a sound worker; the stream ends with the error rather than skipping bytes.
        m = { type: 'error', error: (e as PgError).toFields() }
      }
    }
    if (frames) {
      for (const frame of frames) {
        if (this.skipped(frame)) continue
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
      if (this.data !== this.port) {
        // Tell the Database that attached it to forget it.
        this.port.postMessage({ type: 'ended' } satisfies PageToWorker)
        this.data.close()
      }
      this.port.close()
    }
    const w = this.waiter
    this.waiter = null
    w?.()
  }

  /** Tracks where `frame` leaves the stream; true when it is a re-sent message already received (dropped, credited). */
  private skipped(frame: Uint8Array): boolean {
    const tag = this.received.see(frame)
    const skip = this.skip
    if (!skip || tag === 0 || !counts(tag)) return false
    // see() just read this Begin's final LSN into `partial`.
    if (tag === TAG_BEGIN && skip.remaining > 0) {
      if (this.received.partial!.finalLsn !== skip.finalLsn) {
        this.skip = null // not the transaction received in part: nothing to drop
        return false
      }
    }
    if (--skip.remaining === 0) this.skip = null
    this.consumed += frame.byteLength
    return true
  }

  private send(m: PageToWorker, transfer: Transferable[] = []): void {
    if (!this.ended) this.data.postMessage(m, transfer)
  }

  /** Raw CopyData wire messages ('d', length, XLogData or keepalive), in order. */
  frames(): AsyncGenerator<Uint8Array> {
    return this.iterate((raw) => raw)
  }

  /** Decoded: each XLogData's pgoutput message with its position, and keepalives. */
  messages(): AsyncGenerator<StreamMessage> {
    // One decoder per iteration: it follows Stream Start / Stop (protocol 2+ streaming).
    const decoder = new PgoutputStreamDecoder()
    return this.iterate((raw) => decodeMessage(raw, decoder))
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
        // Bytes a previous worker sent are not credited to the new one.
        const old = Math.min(this.stale, f.byteLength)
        this.stale -= old
        this.consumed += f.byteLength - old
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

function decodeMessage(raw: Uint8Array, decoder: PgoutputStreamDecoder): StreamMessage | undefined {
  const f = decodeFrame(raw.subarray(COPY_DATA_HEADER))
  if (f.tag === 'w') return { kind: 'xlog', walStart: f.walStart, walEnd: f.walEnd, message: decoder.decode(f.data), data: f.data }
  if (f.tag === 'k') return { kind: 'keepalive', walEnd: f.walEnd, replyRequested: f.replyRequested }
  return undefined
}
