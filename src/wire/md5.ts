// MD5 message digest, RFC 1321 (https://www.rfc-editor.org/rfc/rfc1321).
// WebCrypto has no MD5, and PostgreSQL's AuthenticationMD5Password exchange needs
// it; this is a straightforward one-shot implementation, not meant for bulk data.
// Uint8Array/DataView only: it runs in the browser worker too.

/** T[i] = floor(2^32 * abs(sin(i + 1))), RFC 1321 section 3.4, spelled out so no
 *  engine's Math.sin rounding can change it. */
const T = new Uint32Array([
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
])

/** Per-step left-rotate amounts, four per round (RFC 1321 section 3.4). */
const S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21]

/** The 16-byte MD5 digest of `data`. */
export function md5(data: Uint8Array): Uint8Array {
  // Step 1-2 (section 3.1, 3.2): append 0x80, zero-pad to 56 mod 64, then the
  // message length in bits as a 64-bit little-endian integer.
  const padded = new Uint8Array((((data.length + 8) >>> 6) + 1) * 64)
  padded.set(data)
  padded[data.length] = 0x80
  const view = new DataView(padded.buffer)
  const bits = data.length * 8
  view.setUint32(padded.length - 8, bits >>> 0, true)
  view.setUint32(padded.length - 4, Math.floor(bits / 0x100000000), true)

  // Step 3 (section 3.3): the initial state words A, B, C, D.
  let a0 = 0x67452301
  let b0 = 0xefcdab89
  let c0 = 0x98badcfe
  let d0 = 0x10325476
  const X = new Uint32Array(16)

  // Step 4 (section 3.4): 64 operations per 16-word block, in four rounds.
  for (let off = 0; off < padded.length; off += 64) {
    for (let j = 0; j < 16; j++) X[j] = view.getUint32(off + j * 4, true)
    let a = a0
    let b = b0
    let c = c0
    let d = d0
    for (let i = 0; i < 64; i++) {
      const round = i >>> 4
      let f: number
      let k: number
      if (round === 0) {
        f = (b & c) | (~b & d) // F
        k = i
      } else if (round === 1) {
        f = (b & d) | (c & ~d) // G
        k = (5 * i + 1) & 15
      } else if (round === 2) {
        f = b ^ c ^ d // H
        k = (3 * i + 5) & 15
      } else {
        f = c ^ (b | ~d) // I
        k = (7 * i) & 15
      }
      const sum = (a + f + T[i] + X[k]) | 0
      const s = S[round * 4 + (i & 3)]
      a = d
      d = c
      c = b
      b = (b + ((sum << s) | (sum >>> (32 - s)))) | 0
    }
    a0 = (a0 + a) | 0
    b0 = (b0 + b) | 0
    c0 = (c0 + c) | 0
    d0 = (d0 + d) | 0
  }

  // Step 5 (section 3.5): the digest is A, B, C, D, each little-endian.
  const out = new Uint8Array(16)
  const ov = new DataView(out.buffer)
  ov.setUint32(0, a0, true)
  ov.setUint32(4, b0, true)
  ov.setUint32(8, c0, true)
  ov.setUint32(12, d0, true)
  return out
}

/** Lowercase hex of `md5(data)`, the form PostgreSQL's md5 passwords use. */
export function md5Hex(data: Uint8Array): string {
  let s = ''
  for (const b of md5(data)) s += b.toString(16).padStart(2, '0')
  return s
}
