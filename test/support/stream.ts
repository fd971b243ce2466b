// A ReplicationWriter that records wire messages and lets tests await frames.

import { decodeFrame, type ReplicationFrame } from '../../src/protocol/replication-frames'
import type { ReplicationWriter } from '../../src/orez/handler'

export interface Recorded {
  writer: ReplicationWriter
  messages: Uint8Array[]
  /** XLogData / keepalive frames decoded from CopyData messages. */
  frames: ReplicationFrame[]
  /** Resolves with the first frame (already seen or future) matching pred. */
  waitFor(pred: (f: ReplicationFrame) => boolean, what?: string): Promise<ReplicationFrame>
  /** Resolves when a wire message (any tag byte) matching pred arrives. */
  waitForMessage(pred: (m: Uint8Array) => boolean): Promise<Uint8Array>
}

export function recordStream(): Recorded {
  const messages: Uint8Array[] = []
  const frames: ReplicationFrame[] = []
  const waiters: { pred: (f: ReplicationFrame) => boolean; resolve: (f: ReplicationFrame) => void }[] = []
  const msgWaiters: { pred: (m: Uint8Array) => boolean; resolve: (m: Uint8Array) => void }[] = []
  const writer: ReplicationWriter = {
    write(data) {
      const m = new Uint8Array(data)
      messages.push(m)
      for (let i = msgWaiters.length - 1; i >= 0; i--) {
        if (msgWaiters[i].pred(m)) msgWaiters.splice(i, 1)[0].resolve(m)
      }
      if (m[0] !== 0x64) return
      const f = decodeFrame(m.subarray(5))
      frames.push(f)
      for (let i = waiters.length - 1; i >= 0; i--) {
        if (waiters[i].pred(f)) waiters.splice(i, 1)[0].resolve(f)
      }
    },
  }
  return {
    writer,
    messages,
    frames,
    waitFor(pred) {
      const hit = frames.find(pred)
      if (hit) return Promise.resolve(hit)
      return new Promise((resolve) => waiters.push({ pred, resolve }))
    },
    waitForMessage(pred) {
      const hit = messages.find(pred)
      if (hit) return Promise.resolve(hit)
      return new Promise((resolve) => msgWaiters.push({ pred, resolve }))
    },
  }
}

/** pgoutput payloads of all XLogData frames so far. */
export function payloads(r: Recorded): Uint8Array[] {
  return r.frames.flatMap((f) => (f.tag === 'w' ? [f.data] : []))
}
