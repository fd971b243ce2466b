// Frames read ahead of durability. Behind a durability gate (IndexedDB with
// group commit) a stream reads and encodes a commit as soon as it commits,
// but holds its frames until the flush that makes it durable, which
// releases them at once, without another read of the change log: a consumer
// gets a commit right after it becomes durable and never before.

import type { Lsn } from '../../protocol/lsn'

/** Where XLogData's clock sits in a CopyData frame: after 'd', the length, 'w', walStart and walEnd. */
const XLOGDATA_CLOCK_OFFSET = 1 + 4 + 1 + 8 + 8

/**
 * Bytes of frames a stream reads ahead of durability at most (less when its
 * sink's window has less room): a large transaction is read while its flush
 * runs, and goes out at once when the flush ends.
 */
export const HOLD_AHEAD = 4 * 1024 * 1024

/** Writes one frame; `commit` is the commit LSN when the frame is a Commit. */
export type WriteFrame = (bytes: Uint8Array, commit?: Lsn) => void

export class DurableHold {
  /** In stream order, each with the durable position that releases it. */
  private held: { until: bigint; bytes: Uint8Array; commit?: Lsn }[] = []
  /** Bytes of the held frames. */
  bytes = 0
  /** Commit position of the transaction whose frames are being written (what releases them). */
  until = 0n

  constructor(
    /** The durable position now; undefined: no gate, every frame goes at once. */
    private readonly durable: (() => bigint) | undefined,
    private readonly write: WriteFrame,
  ) {}

  /** To the consumer now, or held until the frame's commit is durable. */
  emit(bytes: Uint8Array, commit?: Lsn): void {
    if (this.durable && (this.held.length > 0 || this.until > this.durable())) {
      this.held.push({ until: this.until, bytes, commit })
      this.bytes += bytes.byteLength
    } else this.write(bytes, commit)
  }

  /** Writes the held frames that are durable now, in order, stamped with `clock`; how many. */
  release(clock: bigint): number {
    const durable = this.durable!()
    let n = 0
    while (n < this.held.length && this.held[n].until <= durable) {
      const { bytes, commit } = this.held[n++]
      this.bytes -= bytes.byteLength
      // XLogData's clock is the time of transmission: now, not when it was encoded.
      new DataView(bytes.buffer, bytes.byteOffset).setBigInt64(XLOGDATA_CLOCK_OFFSET, clock)
      this.write(bytes, commit)
    }
    if (n) this.held.splice(0, n)
    return n
  }

  get size(): number {
    return this.held.length
  }

  /** Frames of commits that never became durable while the stream ran: the consumer never saw them. */
  drop(): void {
    this.held = []
    this.bytes = 0
  }
}
