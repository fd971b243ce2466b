// What PGlite's backend says that a client of tabgres must not see.
//
// - NotificationResponse on the engine's commit channel: the capture's commit
//   trigger NOTIFYs so replication sessions wake (replication/notifier.ts);
//   PGlite's raw protocol path hands it to whoever ran the statement, so it is
//   taken out here and turned into the wake-up it stands for.
// - Control notices (SQLSTATE TG000): requests from the slot functions and
//   pg_terminate_backend to the engine (capture/slots.sql), carried out by
//   the session that ran the statement.
// - The WARNING that CREATE/ALTER PUBLICATION raises because PGlite's real
//   wal_level is 'replica': tabgres provides logical decoding itself.
// Spec: "Message Formats" (NotificationResponse 'A', NoticeResponse 'N').

import { ByteReader } from '../protocol/bytes'
import { BackendTag } from '../protocol/backend'
import { forEachMessage } from '../protocol/backend-decode'
import { COMMIT_CHANNEL, CONTROL_SQLSTATE } from '../engine/capture/names'

const WAL_LEVEL_WARNING = '"wal_level" is insufficient to publish logical changes'
const latin1 = new TextDecoder('latin1')

export interface Filtered {
  bytes: Uint8Array
  /** Payloads of the commit notifications removed (each: a transaction with changes committed, at that position). */
  commits: string[]
  /** Messages of the control notices removed (JSON requests to the engine). */
  controls: string[]
}

/** The payload of a commit notification, or null for any other notification. */
function commitPayload(body: Uint8Array): string | null {
  const r = new ByteReader(body)
  r.int32() // process ID
  if (r.cstring() !== COMMIT_CHANNEL) return null
  return r.cstring()
}

/** The message of a control notice, or null for any other notice. */
function controlMessage(body: Uint8Array): string | null {
  if (!latin1.decode(body).includes(`\0C${CONTROL_SQLSTATE}\0`)) return null
  const r = new ByteReader(body)
  for (let code = r.uint8(); code !== 0; code = r.uint8()) {
    const value = r.cstring()
    if (code === 0x4d /* M */) return value
  }
  return null
}

function isWalLevelWarning(body: Uint8Array): boolean {
  // Fields are a code byte and a NUL-terminated string each; 'M' is the message.
  return latin1.decode(body).includes(`\0M${WAL_LEVEL_WARNING}`) || latin1.decode(body).startsWith(`M${WAL_LEVEL_WARNING}`)
}

export function filterBackendOutput(out: Uint8Array): Filtered {
  const commits: string[] = []
  const controls: string[] = []
  const keep: [number, number][] = []
  const whole = forEachMessage(out, (tag, start, end) => {
    const body = out.subarray(start + 5, end)
    const payload = tag === BackendTag.NotificationResponse ? commitPayload(body) : null
    const control = tag === BackendTag.NoticeResponse ? controlMessage(body) : null
    if (payload !== null) commits.push(payload)
    else if (control !== null) controls.push(control)
    else if (tag !== BackendTag.NoticeResponse || !isWalLevelWarning(body)) keep.push([start, end])
  })
  if (keep.length === 1 && keep[0][0] === 0 && keep[0][1] === out.length) return { bytes: out, commits, controls }
  // What is kept, and a partial message at the end as it came.
  const size = keep.reduce((n, [a, b]) => n + b - a, 0) + (out.length - whole)
  const bytes = new Uint8Array(size)
  let o = 0
  for (const [a, b] of keep) {
    bytes.set(out.subarray(a, b), o)
    o += b - a
  }
  bytes.set(out.subarray(whole), o)
  return { bytes, commits, controls }
}
