// pg_recvlogical (Debian's PostgreSQL 15 tools) as a client of the engine: the
// pgoutput messages of the file it writes.

import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import type { PgoutputMessage } from '../../src/protocol/pgoutput'

/** pgoutput messages from pg_recvlogical's file: each message is followed by a newline. */
export function splitRecvlogicalFile(bytes: Uint8Array): PgoutputMessage[] {
  const out: PgoutputMessage[] = []
  let off = 0
  while (off < bytes.length) {
    let end = bytes.indexOf(0x0a, off)
    for (;;) {
      if (end < 0) throw new Error(`undecodable tail at ${off}`)
      try {
        out.push(decodePgoutput(bytes.subarray(off, end)))
        break
      } catch {
        end = bytes.indexOf(0x0a, end + 1) // the newline was inside the message
      }
    }
    off = end + 1
  }
  return out
}
