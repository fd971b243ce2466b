// Decoding backend messages of the frontend/backend protocol 3.0 (the
// replies a replication command produces), for the worker API and clients.
// Spec: PostgreSQL docs, "Message Formats". Only complete messages: the
// caller hands whole replies (framing of a byte stream is the transport's).

import { ByteReader, ProtocolError } from './bytes'
import { BackendTag } from './backend'
import { ERROR_FIELD_CODES, type PgErrorFields } from './errors'

export type BackendMessage =
  | { tag: 'T'; fields: { name: string; typeOid: number }[] }
  | { tag: 'D'; values: (string | null)[] }
  | { tag: 'C'; commandTag: string }
  | { tag: 'E' | 'N'; fields: PgErrorFields }
  | { tag: 'Z'; status: string }
  | { tag: 'other'; type: string; body: Uint8Array }

const FIELD_KEYS = new Map(ERROR_FIELD_CODES)

const decoder = new TextDecoder('utf-8', { fatal: true })

export function decodeBackendMessages(bytes: Uint8Array): BackendMessage[] {
  const out: BackendMessage[] = []
  const r = new ByteReader(bytes)
  while (r.remaining > 0) {
    const type = r.char()
    const len = r.int32()
    if (len < 4) throw new ProtocolError(`invalid length ${len} for message '${type}'`, r.offset - 4)
    const body = new ByteReader(r.bytesN(len - 4))
    switch (type) {
      case 'T': {
        const n = body.int16()
        const fields = []
        for (let i = 0; i < n; i++) {
          const name = body.cstring()
          body.int32() // table OID
          body.int16() // column attnum
          const typeOid = body.int32()
          body.int16() // typlen
          body.int32() // typmod
          body.int16() // format
          fields.push({ name, typeOid })
        }
        out.push({ tag: 'T', fields })
        break
      }
      case 'D': {
        const n = body.int16()
        const values: (string | null)[] = []
        for (let i = 0; i < n; i++) {
          const l = body.int32()
          values.push(l < 0 ? null : decoder.decode(body.bytesN(l)))
        }
        out.push({ tag: 'D', values })
        break
      }
      case 'C':
        out.push({ tag: 'C', commandTag: body.cstring() })
        break
      case 'E':
      case 'N':
        out.push({ tag: type, fields: errorFields(body) })
        break
      case 'Z':
        out.push({ tag: 'Z', status: body.char() })
        break
      default:
        out.push({ tag: 'other', type, body: body.bytes })
    }
  }
  return out
}

/** An ErrorResponse or NoticeResponse body's fields (unknown letters skipped). */
function errorFields(body: ByteReader): PgErrorFields {
  const fields: Partial<PgErrorFields> = {}
  for (let code = body.char(); code !== '\0'; code = body.char()) {
    const key = FIELD_KEYS.get(code)
    const value = body.cstring()
    if (key) fields[key] = value
  }
  return { code: 'XX000', message: '', ...fields }
}

/**
 * Calls fn with each whole message of a backend byte stream: its tag byte
 * and its body (offsets into `out`). Stops at a partial message; returns
 * where the whole messages end.
 */
export function forEachMessage(out: Uint8Array, fn: (tag: number, start: number, end: number) => void): number {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  let off = 0
  while (off + 5 <= out.length) {
    const end = off + 1 + view.getInt32(off + 1)
    if (end > out.length || end < off + 5) break
    fn(out[off], off, end)
    off = end
  }
  return off
}

/** True when a backend byte stream carries an ErrorResponse. */
export function hasErrorResponse(out: Uint8Array): boolean {
  let found = false
  forEachMessage(out, (tag) => (found ||= tag === BackendTag.ErrorResponse))
  return found
}

/** The status of the last ReadyForQuery in a backend byte stream ('I', 'T' or 'E'), or null. */
export function lastReadyStatus(out: Uint8Array): string | null {
  let status: string | null = null
  forEachMessage(out, (tag, start, end) => {
    if (tag === BackendTag.ReadyForQuery && end - start === 6) status = String.fromCharCode(out[start + 5])
  })
  return status
}

/** The fields of the first ErrorResponse in a backend byte stream. */
export function firstError(out: Uint8Array): PgErrorFields {
  let fields: PgErrorFields | null = null
  forEachMessage(out, (tag, start, end) => {
    if (tag === BackendTag.ErrorResponse && !fields) fields = errorFields(new ByteReader(out.subarray(start + 5, end)))
  })
  return fields ?? { code: 'XX000', message: 'unknown error' }
}
