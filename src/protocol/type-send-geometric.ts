// Binary send formats of the geometric types (point_send, lseg_send, box_send,
// line_send, circle_send, path_send, poly_send) and the network addresses
// (inet_send, cidr_send), from their text output; ./type-send.ts registers
// them with the other types. Geometric values are float8s in the order their
// text lists them (extra_float_digits 1 prints each exactly).
// Spec: PostgreSQL's src/backend/utils/adt/geo_ops.c and network.c.

/** The numbers of a geometric value's text ("(1,2)", "[(0,0),(1,1)]", "<(0,0),5>", "{1,-1,0}"), in order. */
function numbers(text: string): number[] {
  return (text.match(/[-+]?(?:Infinity|NaN|[0-9.]+(?:e[-+]?\d+)?)/gi) ?? []).map(Number)
}

function float8s(values: number[], head = 0): Uint8Array {
  const b = new Uint8Array(head + values.length * 8)
  const v = new DataView(b.buffer)
  values.forEach((x, i) => v.setFloat64(head + i * 8, x))
  return b
}

/** path_send: closed flag, point count, points; poly_send: point count, points. */
function points(text: string, withClosedFlag: boolean): Uint8Array {
  const xs = numbers(text)
  const head = withClosedFlag ? 5 : 4
  const b = float8s(xs, head)
  // A closed path prints in parentheses, an open one in brackets.
  if (withClosedFlag) b[0] = text.startsWith('(') ? 1 : 0
  new DataView(b.buffer).setInt32(head - 4, xs.length / 2)
  return b
}

/** An IPv6 address as 16 bytes: "::" and a trailing dotted IPv4 part allowed. */
function ipv6(addr: string): number[] {
  let tail: number[] = []
  let a = addr
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(a)
  if (v4) {
    tail = v4[1].split('.').map(Number)
    a = a.slice(0, -v4[1].length)
    if (a.endsWith(':') && !a.endsWith('::')) a = a.slice(0, -1)
  }
  const [head, rest] = a.split('::')
  const group = (p: string | undefined) => (p ? p.split(':').filter(Boolean).map((h) => parseInt(h, 16)) : [])
  const hi = group(head)
  const lo = group(rest)
  const zeros = 8 - tail.length / 2 - hi.length - lo.length
  const words = rest === undefined ? hi : [...hi, ...Array(zeros).fill(0), ...lo]
  return [...words.flatMap((w) => [w >> 8, w & 0xff]), ...tail]
}

/** inet_send / cidr_send: family, prefix bits, is-cidr flag, address length, address. */
function inet(text: string, cidr: boolean): Uint8Array {
  const [addr, bitsText] = text.split('/')
  const bytes = addr.includes(':') ? ipv6(addr) : addr.split('.').map(Number)
  const v6 = bytes.length === 16
  const bits = bitsText === undefined ? (v6 ? 128 : 32) : Number(bitsText)
  // PGSQL_AF_INET is AF_INET (2) and PGSQL_AF_INET6 is AF_INET + 1.
  return Uint8Array.of(v6 ? 3 : 2, bits, cidr ? 1 : 0, bytes.length, ...bytes)
}

export const GEOMETRIC_AND_NETWORK: Record<string, (text: string) => Uint8Array> = {
  point_send: (t) => float8s(numbers(t)),
  lseg_send: (t) => float8s(numbers(t)),
  box_send: (t) => float8s(numbers(t)),
  line_send: (t) => float8s(numbers(t)),
  circle_send: (t) => float8s(numbers(t)),
  path_send: (t) => points(t, true),
  poly_send: (t) => points(t, false),
  inet_send: (t) => inet(t, false),
  cidr_send: (t) => inet(t, true),
}
