// Decoding backend messages of the frontend/backend protocol 3.0 (the
// replies a replication command produces), for the worker API and clients.
// Spec: PostgreSQL docs, "Message Formats". Only complete messages: the
// caller hands whole replies (framing of a byte stream is the transport's).

import { ByteReader, ProtocolError } from './bytes'
import type { PgErrorFields } from './errors'

export type BackendMessage =
  | { tag: 'T'; fields: { name: string; typeOid: number }[] }
  | { tag: 'D'; values: (string | null)[] }
  | { tag: 'C'; commandTag: string }
  | { tag: 'E' | 'N'; fields: PgErrorFields }
  | { tag: 'Z'; status: string }
  | { tag: 'other'; type: string; body: Uint8Array }

/** ErrorResponse/NoticeResponse field letters (PostgreSQL docs, "Error and Notice Message Fields"). */
const ERROR_FIELDS: Record<string, keyof PgErrorFields> = {
  S: 'severity',
  C: 'code',
  M: 'message',
  D: 'detail',
  H: 'hint',
  P: 'position',
  W: 'where',
  s: 'schema',
  t: 'table',
  c: 'column',
  n: 'constraint',
}

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
      case 'N': {
        const fields: Partial<PgErrorFields> = {}
        for (let code = body.char(); code !== '\0'; code = body.char()) {
          const key = ERROR_FIELDS[code]
          const value = body.cstring()
          if (key) fields[key] = value
        }
        out.push({ tag: type, fields: { code: 'XX000', message: '', ...fields } })
        break
      }
      case 'Z':
        out.push({ tag: 'Z', status: body.char() })
        break
      default:
        out.push({ tag: 'other', type, body: body.bytes })
    }
  }
  return out
}
