// Streaming replication CopyData payloads (the bytes inside a CopyData 'd').
// Spec: PostgreSQL docs, "Streaming Replication Protocol", START_REPLICATION:
// XLogData 'w', Primary keepalive 'k' (server to client), Standby status update 'r'
// (client to server).

import { ByteReader, ByteWriter, ProtocolError } from './bytes'
import type { Lsn } from './lsn'

export const enum FrameTag {
  XLogData = 0x77, // 'w'
  Keepalive = 0x6b, // 'k'
  StandbyStatusUpdate = 0x72, // 'r'
  HotStandbyFeedback = 0x68, // 'h'
}

export type ReplicationFrame =
  | { tag: 'w'; walStart: Lsn; walEnd: Lsn; clock: bigint; data: Uint8Array }
  | { tag: 'k'; walEnd: Lsn; clock: bigint; replyRequested: boolean }
  | { tag: 'r'; written: Lsn; flushed: Lsn; applied: Lsn; clock: bigint; replyRequested: boolean }

/** Header length of an XLogData payload before the pgoutput message. */
export const XLOG_DATA_HEADER = 25

export function encodeFrame(f: ReplicationFrame, w = new ByteWriter(64)): Uint8Array {
  w.reset()
  switch (f.tag) {
    case 'w':
      w.char('w').uint64(f.walStart).uint64(f.walEnd).int64(f.clock).bytes(f.data)
      break
    case 'k':
      w.char('k').uint64(f.walEnd).int64(f.clock).uint8(f.replyRequested ? 1 : 0)
      break
    case 'r':
      w.char('r').uint64(f.written).uint64(f.flushed).uint64(f.applied).int64(f.clock)
      w.uint8(f.replyRequested ? 1 : 0)
      break
  }
  return w.toBytes()
}

export function decodeFrame(bytes: Uint8Array): ReplicationFrame {
  const r = new ByteReader(bytes)
  const tag = r.char()
  let f: ReplicationFrame
  switch (tag) {
    case 'w': {
      const walStart = r.uint64()
      const walEnd = r.uint64()
      const clock = r.int64()
      f = { tag, walStart, walEnd, clock, data: r.bytesN(r.remaining) }
      break
    }
    case 'k':
      f = { tag, walEnd: r.uint64(), clock: r.int64(), replyRequested: r.uint8() === 1 }
      break
    case 'r':
      f = {
        tag,
        written: r.uint64(),
        flushed: r.uint64(),
        applied: r.uint64(),
        clock: r.int64(),
        replyRequested: r.uint8() === 1,
      }
      break
    default:
      throw new ProtocolError(
        `unknown replication frame tag 0x${tag.charCodeAt(0).toString(16)} at offset 0`,
        0,
      )
  }
  if (r.remaining !== 0) {
    throw new ProtocolError(`${r.remaining} trailing bytes after '${tag}' frame`, r.offset)
  }
  return f
}
