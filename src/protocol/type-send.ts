// PostgreSQL types' binary send formats (what each type's typsend function
// writes, and what pgoutput sends as a 'b' column when `binary 'true'`), made
// from the type's text output. The change log keeps text in canonical output
// settings (DateStyle ISO, TimeZone UTC, IntervalStyle postgres,
// extra_float_digits 1, bytea_output hex; capture/log.sql), so each text here
// has exactly one form to parse. Encoders are keyed by the send function's
// name, as pg_type.typsend names it, so enums, domains and arrays of any
// element follow from the catalog rather than from a list of OIDs.
// Spec: PostgreSQL's src/backend/utils/adt/*.c, the *_send functions.

import { hexToBytes, textEncoder } from './bytes'
import { PgError, SqlState } from './errors'
import { GEOMETRIC_AND_NETWORK } from './type-send-geometric'

/** How to send one column's type: its send function, and its element's for an array. */
export interface SendSpec {
  send: string
  /** array_send: the element type's OID and send function. */
  elemOid?: number
  elemSend?: string
}

const USECS_PER_DAY = 86_400_000_000n
const INT64_MAX = 0x7fffffffffffffffn
const INT64_MIN = -0x8000000000000000n

class Out {
  private buf = new Uint8Array(64)
  private view = new DataView(this.buf.buffer)
  length = 0
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n))
    next.set(this.buf.subarray(0, this.length))
    this.buf = next
    this.view = new DataView(next.buffer)
  }
  int16(v: number): void {
    this.room(2)
    this.view.setInt16(this.length, v)
    this.length += 2
  }
  int32(v: number): void {
    this.room(4)
    this.view.setInt32(this.length, v)
    this.length += 4
  }
  int64(v: bigint): void {
    this.room(8)
    this.view.setBigInt64(this.length, v)
    this.length += 8
  }
  bytes(b: Uint8Array): void {
    this.room(b.length)
    this.buf.set(b, this.length)
    this.length += b.length
  }
  done(): Uint8Array {
    return this.buf.slice(0, this.length)
  }
}

function fixed(n: number, write: (v: DataView) => void): Uint8Array {
  const b = new Uint8Array(n)
  write(new DataView(b.buffer))
  return b
}

/** Days from 2000-01-01 to the proleptic Gregorian date (y may be <= 0: astronomical years). */
function daysFrom2000(y: number, m: number, d: number): number {
  // Howard Hinnant's days_from_civil, shifted to PostgreSQL's epoch.
  y -= m <= 2 ? 1 : 0
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468 - 10957
}

function bad(type: string, text: string): PgError {
  return new PgError({ code: SqlState.internalError, message: `cannot send ${type} value "${text.slice(0, 60)}" in binary` })
}

/** "YYYY-MM-DD[ BC]" (ISO output) as days from 2000-01-01. */
function dateDays(text: string, type = 'date'): number {
  const m = /^(\d{4,})-(\d\d)-(\d\d)( BC)?$/.exec(text)
  if (!m) throw bad(type, text)
  const year = m[4] ? 1 - Number(m[1]) : Number(m[1])
  return daysFrom2000(year, Number(m[2]), Number(m[3]))
}

/** "HH:MM:SS[.ffffff]" as microseconds. */
function timeUsecs(text: string, type = 'time'): bigint {
  const m = /^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/.exec(text)
  if (!m) throw bad(type, text)
  const frac = BigInt((m[4] ?? '').padEnd(6, '0'))
  return ((BigInt(m[1]) * 60n + BigInt(m[2])) * 60n + BigInt(m[3])) * 1_000_000n + frac
}

/** "+HH[:MM[:SS]]" as seconds east of UTC. */
function zoneSeconds(text: string, type: string): number {
  const m = /^([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?$/.exec(text)
  if (!m) throw bad(type, text)
  const s = Number(m[2]) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0)
  return m[1] === '-' ? -s : s
}

function timestampUsecs(text: string, withZone: boolean): bigint {
  if (text === 'infinity') return INT64_MAX
  if (text === '-infinity') return INT64_MIN
  const type = withZone ? 'timestamptz' : 'timestamp'
  const bc = text.endsWith(' BC')
  const body = bc ? text.slice(0, -3) : text
  const m = withZone
    ? /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)([+-][\d:]+)$/.exec(body)
    : /^(\d{4,}-\d\d-\d\d) (\d\d:\d\d:\d\d(?:\.\d+)?)()$/.exec(body)
  if (!m) throw bad(type, text)
  const days = dateDays(m[1] + (bc ? ' BC' : ''), type)
  let us = BigInt(days) * USECS_PER_DAY + timeUsecs(m[2], type)
  if (withZone) us -= BigInt(zoneSeconds(m[3], type)) * 1_000_000n
  return us
}

/** IntervalStyle postgres: "[N year[s]] [N mon[s]] [N day[s]] [[+-]HH:MM:SS[.ffffff]]". */
function interval(text: string): Uint8Array {
  if (text === 'infinity' || text === '-infinity') {
    const pos = text === 'infinity'
    return fixed(16, (v) => {
      v.setBigInt64(0, pos ? INT64_MAX : INT64_MIN)
      v.setInt32(8, pos ? 0x7fffffff : -0x80000000)
      v.setInt32(12, pos ? 0x7fffffff : -0x80000000)
    })
  }
  let months = 0
  let days = 0
  let us = 0n
  const re = /\s*(?:([+-]?\d+) (years?|mons?|days?)|([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?)/y
  let at = 0
  while (at < text.length) {
    re.lastIndex = at
    const m = re.exec(text)
    if (!m) throw bad('interval', text)
    at = re.lastIndex
    if (m[1] !== undefined) {
      const n = Number(m[1])
      if (m[2].startsWith('year')) months += n * 12
      else if (m[2].startsWith('mon')) months += n
      else days += n
    } else {
      const t = ((BigInt(m[4]) * 60n + BigInt(m[5])) * 60n + BigInt(m[6])) * 1_000_000n + BigInt((m[7] ?? '').padEnd(6, '0'))
      us += m[3] === '-' ? -t : t
    }
  }
  return fixed(16, (v) => {
    v.setBigInt64(0, us)
    v.setInt32(8, days)
    v.setInt32(12, months)
  })
}

const NUMERIC_POS = 0x0000
const NUMERIC_NEG = 0x4000
const NUMERIC_NAN = 0xc000
const NUMERIC_PINF = 0xd000
const NUMERIC_NINF = 0xf000

/** numeric_send: base-10000 digits, the weight of the first, sign, display scale. */
function numeric(text: string): Uint8Array {
  const special = { NaN: NUMERIC_NAN, Infinity: NUMERIC_PINF, '-Infinity': NUMERIC_NINF }[text]
  if (special !== undefined) {
    return fixed(8, (v) => {
      v.setUint16(4, special)
      // numeric_send reads a special value's display scale from the bits of
      // its header that a short numeric keeps it in: 0 for NaN, 32 for +-Infinity.
      v.setInt16(6, (special & 0x1f80) >> 7)
    })
  }
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text)
  if (!m) throw bad('numeric', text)
  const intPart = m[2].replace(/^0+/, '')
  const frac = m[3] ?? ''
  const dscale = frac.length
  // Group the integer digits from the decimal point leftwards, the fraction rightwards.
  const intPadded = intPart.padStart(Math.ceil(intPart.length / 4) * 4, '0')
  const fracPadded = frac.padEnd(Math.ceil(frac.length / 4) * 4, '0')
  const groups: number[] = []
  for (let i = 0; i < intPadded.length; i += 4) groups.push(Number(intPadded.slice(i, i + 4)))
  let weight = groups.length - 1
  for (let i = 0; i < fracPadded.length; i += 4) groups.push(Number(fracPadded.slice(i, i + 4)))
  let first = 0
  while (first < groups.length && groups[first] === 0) {
    first++
    weight--
  }
  let last = groups.length
  while (last > first && groups[last - 1] === 0) last--
  const digits = groups.slice(first, last)
  // Zero: no digits, weight 0, positive (numeric_send of any zero).
  const zero = digits.length === 0
  const out = new Out()
  out.int16(digits.length)
  out.int16(zero ? 0 : weight)
  out.int16(zero ? NUMERIC_POS : m[1] ? NUMERIC_NEG : NUMERIC_POS)
  out.int16(dscale)
  for (const d of digits) out.int16(d)
  return out.done()
}

/** array_out's text: optional "[lo:hi]..." bounds then nested braces. */
function parseArray(text: string): { dims: number[]; lbounds: number[]; items: (string | null)[] } {
  let i = 0
  const lbounds: number[] = []
  if (text[0] === '[') {
    const eq = text.indexOf('=')
    for (const b of text.slice(0, eq).matchAll(/\[(-?\d+):(-?\d+)\]/g)) lbounds.push(Number(b[1]))
    i = eq + 1
  }
  const dims: number[] = []
  const counts: number[] = []
  const items: (string | null)[] = []
  let depth = 0
  const count = () => {
    if (depth > 0) counts[depth - 1] = (counts[depth - 1] ?? 0) + 1
  }
  for (; i < text.length; i++) {
    const c = text[i]
    if (c === '{') {
      count()
      depth++
      counts[depth - 1] = 0
    } else if (c === '}') {
      if (dims[depth - 1] === undefined) dims[depth - 1] = counts[depth - 1]
      depth--
    } else if (c === ',') {
      continue
    } else if (c === '"') {
      let v = ''
      for (i++; text[i] !== '"'; i++) {
        if (i >= text.length) throw bad('array', text)
        if (text[i] === '\\') i++
        v += text[i]
      }
      count()
      items.push(v)
    } else {
      let j = i
      while (j < text.length && text[j] !== ',' && text[j] !== '}') j++
      const raw = text.slice(i, j)
      count()
      items.push(raw === 'NULL' ? null : raw)
      i = j - 1
    }
  }
  if (dims.length === 1 && dims[0] === 0) return { dims: [], lbounds: [], items: [] }
  return { dims, lbounds: dims.map((_, k) => lbounds[k] ?? 1), items }
}

function array(text: string, spec: SendSpec): Uint8Array {
  if (spec.elemOid === undefined || !spec.elemSend) throw bad('array', text)
  const { dims, lbounds, items } = parseArray(text)
  const out = new Out()
  out.int32(dims.length)
  out.int32(items.includes(null) ? 1 : 0)
  out.int32(spec.elemOid)
  dims.forEach((d, k) => {
    out.int32(d)
    out.int32(lbounds[k])
  })
  const elem: SendSpec = { send: spec.elemSend }
  for (const item of items) {
    if (item === null) {
      out.int32(-1)
      continue
    }
    const b = sendValue(item, elem)
    out.int32(b.length)
    out.bytes(b)
  }
  return out.done()
}

function bits(text: string): Uint8Array {
  const out = new Uint8Array(4 + Math.ceil(text.length / 8))
  new DataView(out.buffer).setInt32(0, text.length)
  for (let i = 0; i < text.length; i++) if (text[i] === '1') out[4 + (i >> 3)] |= 0x80 >> (i & 7)
  return out
}

function charByte(text: string): Uint8Array {
  // charout writes a non-ASCII byte as \ooo.
  if (/^\\[0-7]{3}$/.test(text)) return Uint8Array.of(parseInt(text.slice(1), 8))
  return text === '' ? new Uint8Array(0) : textEncoder.encode(text).subarray(0, 1)
}

const ENCODERS: Record<string, (text: string, spec: SendSpec) => Uint8Array> = {
  boolsend: (t) => Uint8Array.of(t === 't' ? 1 : 0),
  byteasend: (t) => {
    if (!t.startsWith('\\x')) throw bad('bytea', t)
    return hexToBytes(t.slice(2))
  },
  charsend: charByte,
  int2send: (t) => fixed(2, (v) => v.setInt16(0, Number(t))),
  int4send: (t) => fixed(4, (v) => v.setInt32(0, Number(t))),
  int8send: (t) => fixed(8, (v) => v.setBigInt64(0, BigInt(t))),
  oidsend: (t) => fixed(4, (v) => v.setUint32(0, Number(t))),
  xidsend: (t) => fixed(4, (v) => v.setUint32(0, Number(t))),
  cidsend: (t) => fixed(4, (v) => v.setUint32(0, Number(t))),
  xid8send: (t) => fixed(8, (v) => v.setBigUint64(0, BigInt(t))),
  float4send: (t) => fixed(4, (v) => v.setFloat32(0, Number(t))),
  float8send: (t) => fixed(8, (v) => v.setFloat64(0, Number(t))),
  numeric_send: numeric,
  date_send: (t) =>
    fixed(4, (v) => v.setInt32(0, t === 'infinity' ? 0x7fffffff : t === '-infinity' ? -0x80000000 : dateDays(t))),
  time_send: (t) => fixed(8, (v) => v.setBigInt64(0, timeUsecs(t))),
  timetz_send: (t) => {
    const m = /^([\d:.]+)([+-][\d:]+)$/.exec(t)
    if (!m) throw bad('timetz', t)
    return fixed(12, (v) => {
      v.setBigInt64(0, timeUsecs(m[1], 'timetz'))
      // PostgreSQL keeps the zone as seconds west of UTC.
      v.setInt32(8, -zoneSeconds(m[2], 'timetz'))
    })
  },
  timestamp_send: (t) => fixed(8, (v) => v.setBigInt64(0, timestampUsecs(t, false))),
  timestamptz_send: (t) => fixed(8, (v) => v.setBigInt64(0, timestampUsecs(t, true))),
  interval_send: interval,
  uuid_send: (t) => hexToBytes(t.replace(/-/g, '')),
  jsonb_send: (t) => {
    const b = textEncoder.encode(t)
    const out = new Uint8Array(b.length + 1)
    out[0] = 1 // jsonb's binary format version
    out.set(b, 1)
    return out
  },
  array_send: array,
  bit_send: bits,
  varbit_send: bits,
  pg_lsn_send: (t) => {
    const [hi, lo] = t.split('/')
    return fixed(8, (v) => v.setBigUint64(0, (BigInt('0x' + hi) << 32n) | BigInt('0x' + lo)))
  },
  macaddr_send: (t) => hexToBytes(t.replace(/:/g, '')),
  macaddr8_send: (t) => hexToBytes(t.replace(/:/g, '')),
  ...GEOMETRIC_AND_NETWORK,
}

// The text types: their send format is the text itself (UTF-8, the database encoding).
for (const name of ['textsend', 'varcharsend', 'bpcharsend', 'namesend', 'json_send', 'xml_send', 'unknownsend', 'enum_send', 'cstring_send', 'citextsend']) {
  ENCODERS[name] = (t) => textEncoder.encode(t)
}

/** Whether tabgres can send this type in binary. */
export function canSend(spec: SendSpec): boolean {
  return spec.send in ENCODERS && (spec.send !== 'array_send' || (spec.elemSend !== undefined && spec.elemSend in ENCODERS))
}

/** One non-NULL value's binary send format, from its canonical text output. */
export function sendValue(text: string, spec: SendSpec): Uint8Array {
  const encode = ENCODERS[spec.send]
  if (!encode) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `binary output by ${spec.send} is not supported by tabgres` })
  }
  return encode(text, spec)
}
