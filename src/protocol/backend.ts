// Backend (server to client) messages of the PostgreSQL frontend/backend protocol 3.0.
// Spec: PostgreSQL docs, "Message Formats". Each function returns one complete
// message: tag byte, int32 length (including itself), body.

import { ByteWriter } from './bytes'
import { ERROR_FIELD_CODES, type PgErrorFields } from './errors'

export const enum BackendTag {
  RowDescription = 0x54, // 'T'
  DataRow = 0x44, // 'D'
  CommandComplete = 0x43, // 'C'
  ErrorResponse = 0x45, // 'E'
  NoticeResponse = 0x4e, // 'N'
  NotificationResponse = 0x41, // 'A'
  ReadyForQuery = 0x5a, // 'Z'
  CopyBothResponse = 0x57, // 'W'
  CopyData = 0x64, // 'd'
  CopyDone = 0x63, // 'c'
}

/** ReadyForQuery's transaction status byte. */
export const enum TransactionStatus {
  Idle = 0x49, // 'I'
  InTransaction = 0x54, // 'T'
  Failed = 0x45, // 'E': in a failed transaction block
}

export interface FieldDescription {
  name: string
  tableOid?: number
  columnAttr?: number
  typeOid: number
  typeLen: number
  typeMod?: number
  format?: number
}

/** Common result column types, as PostgreSQL describes them. */
export const TEXT_FIELD = { typeOid: 25, typeLen: -1 } as const
export const INT4_FIELD = { typeOid: 23, typeLen: 4 } as const

function message(tag: string, body: (w: ByteWriter) => void, w = new ByteWriter()): Uint8Array {
  w.reset()
  w.char(tag).int32(0)
  body(w)
  w.patchInt32(1, w.length - 1)
  return w.toBytes()
}

export function rowDescription(fields: FieldDescription[]): Uint8Array {
  return message('T', (w) => {
    w.int16(fields.length)
    for (const f of fields) {
      w.cstring(f.name).uint32(f.tableOid ?? 0).int16(f.columnAttr ?? 0)
      w.uint32(f.typeOid).int16(f.typeLen).int32(f.typeMod ?? -1).int16(f.format ?? 0)
    }
  })
}

export function dataRow(values: (string | null)[]): Uint8Array {
  return message('D', (w) => {
    w.int16(values.length)
    for (const v of values) {
      if (v === null) w.int32(-1)
      else w.lengthPrefixedText(v)
    }
  })
}

export function commandComplete(tag: string): Uint8Array {
  return message('C', (w) => w.cstring(tag))
}

/** ErrorResponse or NoticeResponse; S and V carry the severity as PostgreSQL 9.6+ does. */
export function errorResponse(e: PgErrorFields, kind: 'E' | 'N' = 'E'): Uint8Array {
  return message(kind, (w) => {
    // `message` by name: on a PgError it is Error's own non-enumerable property, which a spread drops.
    const fields: PgErrorFields = { ...e, message: e.message, severity: e.severity ?? 'ERROR' }
    for (const [letter, key] of ERROR_FIELD_CODES) {
      const value = fields[key]
      if (value === undefined) continue
      w.char(letter).cstring(value)
      if (letter === 'S') w.char('V').cstring(value)
    }
    w.uint8(0)
  })
}

export function readyForQuery(status: 'I' | 'T' | 'E'): Uint8Array {
  return message('Z', (w) => w.char(status))
}

/** ParameterStatus: a run-time parameter the client should know (sent at start-up and after SET). */
export function parameterStatus(name: string, value: string): Uint8Array {
  return message('S', (w) => w.cstring(name).cstring(value))
}

/** BackendKeyData: the process ID and secret key a CancelRequest would name. */
export function backendKeyData(processId: number, secretKey: number): Uint8Array {
  return message('K', (w) => w.int32(processId).int32(secretKey))
}

/** ParseComplete, BindComplete, CloseComplete, NoData: the extended protocol's bodiless replies. */
export const parseComplete = (): Uint8Array => message('1', () => {})
export const bindComplete = (): Uint8Array => message('2', () => {})
export const closeComplete = (): Uint8Array => message('3', () => {})
export const noData = (): Uint8Array => message('n', () => {})

/** ParameterDescription: the parameter types of a prepared statement. */
export function parameterDescription(oids: number[]): Uint8Array {
  return message('t', (w) => {
    w.int16(oids.length)
    for (const o of oids) w.uint32(o)
  })
}

/** CopyInResponse: one overall format (text 0, binary 1), no per-column formats. */
export function copyInResponse(binary: boolean): Uint8Array {
  return message('G', (w) => w.uint8(binary ? 1 : 0).int16(0))
}

/** CopyBothResponse as the walsender sends it: text format, zero columns. */
export function copyBothResponse(): Uint8Array {
  return message('W', (w) => w.uint8(0).int16(0))
}

export function copyData(payload: Uint8Array, w?: ByteWriter): Uint8Array {
  return message('d', (b) => b.bytes(payload), w)
}

export function copyDone(): Uint8Array {
  return message('c', () => {})
}

/** A complete simple-query result: RowDescription, DataRows, CommandComplete. */
export function resultSet(fields: FieldDescription[], rows: (string | null)[][], tag: string): Uint8Array[] {
  return [rowDescription(fields), ...rows.map(dataRow), commandComplete(tag)]
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}
