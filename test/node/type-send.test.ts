// Binary send formats made from text (protocol/type-send.ts) against
// PostgreSQL's own send functions, run by PGlite on the same values: every
// value below goes through its type's output in the capture's canonical
// settings, then both ways to bytes.

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseRecord } from '../../src/engine/replication/record'
import { canSend, sendValue } from '../../src/protocol/type-send'

const toHex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')

// [type, literal] pairs; each literal is cast to the type by PostgreSQL.
const CASES: [string, string][] = [
  ['bool', 'true'], ['bool', 'false'],
  ['int2', '-32768'], ['int4', '2147483647'], ['int8', '-9223372036854775808'], ['oid', '4294967295'],
  ['float4', '1.4e-45'], ['float4', '-0'], ['float4', 'NaN'], ['float4', '3.4028235e38'], ['float4', '0.1'],
  ['float8', '5e-324'], ['float8', '-Infinity'], ['float8', '0.30000000000000004'], ['float8', '1e300'],
  ['numeric', '0'], ['numeric', '0.000'], ['numeric', '-0.000000000000000000001'], ['numeric', '12345678.90'],
  ['numeric', '10000'], ['numeric', '100000000.0001'], ['numeric', '-1'], ['numeric', 'NaN'], ['numeric', 'Infinity'],
  ['numeric', '-Infinity'], ['numeric', '3.14159265358979323846264338327950288419716939937510'], ['numeric', '0.5'],
  ['text', 'unicode: héllo ✓ 日本語 😀'], ['varchar(5)', 'ab'], ['char(4)', 'ab'], ['name', 'a name'], ['"char"', 'x'],
  ['bytea', '\\x00ff7f80'], ['bytea', '\\x'],
  ['date', '2024-02-29'], ['date', '2000-01-01'], ['date', '1999-12-31'], ['date', '0044-03-15 BC'], ['date', 'infinity'],
  ['date', '-infinity'], ['date', '5874897-12-31'],
  ['time', '23:59:59.999999'], ['time', '00:00:00'], ['time', '12:30:00.5'],
  ['timetz', '12:00:00+05:30'], ['timetz', '01:02:03.456-08'], ['timetz', '00:00:00+14:59:59'],
  ['timestamp', '2024-01-02 03:04:05.123456'], ['timestamp', '1970-01-01 00:00:00'], ['timestamp', '0001-01-01 00:00:00 BC'],
  ['timestamp', 'infinity'], ['timestamp', '-infinity'], ['timestamp', '1899-12-31 23:59:59.999999'],
  ['timestamptz', '2024-01-02 03:04:05.123456+02'], ['timestamptz', '1900-06-01 12:00:00-03:30'], ['timestamptz', '-infinity'],
  ['interval', '1 year 2 mons 3 days 04:05:06.789'], ['interval', '-1 years -2 mons +3 days -04:05:06'],
  ['interval', '00:00:00'], ['interval', '-00:00:00.000001'], ['interval', '1000000 days'], ['interval', '-178000000 years'],
  ['interval', '2562047788:00:54.775807'], ['interval', '1 day -00:00:01'],
  ['uuid', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'],
  ['json', '{"b": 1,  "a": [1, 2]}'], ['jsonb', '{"b": 1,  "a": [1, 2, {"c": null}], "b": 2}'], ['jsonb', '"x"'],
  ['int4[]', '{1,2,3}'], ['int4[]', '{}'], ['int4[]', '{{1,2},{3,NULL}}'], ['int4[]', '[0:2]={7,8,9}'],
  ['int4[]', '[-2:-1][3:4]={{1,2},{3,4}}'], ['text[]', '{"a b","c,d",NULL,"q\\"uote","back\\\\slash","NULL",""}'],
  ['numeric[]', '{1.5,NaN,-0.25}'], ['timestamptz[]', '{"2024-01-01 00:00:00+00",NULL}'], ['bool[]', '{t,f}'],
  ['bit(10)', '1010101011'], ['varbit', '1'], ['varbit', ''], ['pg_lsn', '16/B374D848'], ['macaddr', '08:00:2b:01:02:03'],
  ['point', '(1.5,-2)'], ['point', '(NaN,Infinity)'], ['lseg', '[(0,0),(1,1e300)]'], ['box', '(1,1),(0,0)'],
  ['line', '{1,-1,0}'], ['circle', '<(0,0),5>'], ['path', '((0,0),(1,1),(2,0))'], ['path', '[(0,0),(1,1)]'],
  ['polygon', '((0,0),(1,1),(1,0))'], ['point[]', '{"(1,2)","(3,4)"}'],
  ['inet', '192.168.1.5'], ['inet', '10.1.2.3/8'], ['cidr', '10.0.0.0/8'], ['inet', '::1'], ['inet', '2001:db8::ff00:42:8329/64'],
  ['cidr', '2001:db8::/32'], ['inet', '::ffff:1.2.3.4'], ['inet', 'fe80::1:2:3:4'], ['inet[]', '{127.0.0.1,::}'],
  ['mood', 'happy'], ['mood[]', '{sad,NULL,ok}'], ['posint', '5'], ['posint[]', '{1,2}'],
  ['xid8', '18446744073709551615'], ['uuid[]', '{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}'], ['jsonb[]', '{"{\\"a\\": 1}"}'],
]

describe('binary send formats from canonical text', () => {
  let db: PGlite
  beforeAll(async () => {
    db = new PGlite()
    await db.exec(`SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres';
                   SET extra_float_digits = 1; SET bytea_output = 'hex';
                   CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN posint AS int4 CHECK (VALUE > 0)`)
  })
  afterAll(() => db.close())

  it.each(CASES)('%s %s', async (type, literal) => {
    const spec = (
      await db.query<{ send: string; elem_oid: number | null; elem_send: string | null }>(
        `SELECT t.typsend::regproc::text AS send,
                CASE WHEN t.typsend = 'array_send'::regproc THEN t.typelem::int END AS elem_oid,
                (SELECT e.typsend::regproc::text FROM pg_type e WHERE e.oid = t.typelem AND t.typsend = 'array_send'::regproc) AS elem_send
           FROM pg_type t WHERE t.oid = $1::regtype`,
        [type],
      )
    ).rows[0]
    // The text as the capture stores it: the type's output function inside record text.
    const [{ row, bin }] = (
      await db.query<{ row: string; bin: string }>(
        `SELECT ROW(v)::text AS row, encode(${spec.send}(v), 'hex') AS bin FROM (SELECT $1::text::${type} AS v) x`,
        [literal],
      )
    ).rows
    const [text] = parseRecord(row) as [string]
    const s = { send: spec.send, elemOid: spec.elem_oid ?? undefined, elemSend: spec.elem_send ?? undefined }
    expect(canSend(s)).toBe(true)
    expect(toHex(sendValue(text, s))).toBe(bin)
  })

  it('a type without an encoder is named in a 0A000 error, never sent as something else', () => {
    expect(canSend({ send: 'range_send' })).toBe(false)
    expect(() => sendValue('[1,2)', { send: 'range_send' })).toThrow(/range_send/)
  })
})
