// SCRAM-SHA-256's messages and crypto (RFC 5802, RFC 7677), SASLprep (RFC
// 4013) and the byte helpers they need, for ./auth.ts's SCRAM exchange.
// WebCrypto only, so the same code runs in a browser worker and in Node.

import { textEncoder } from '../protocol/bytes'
import { PgError, SqlState } from '../protocol/errors'

export const SCRAM_KEY_BYTES = 32

export function protocolViolation(message: string, detail?: string): PgError {
  return new PgError({ severity: 'FATAL', code: SqlState.protocolViolation, message, detail })
}


export function malformedScram(detail: string): PgError {
  return protocolViolation('malformed SCRAM message', detail)
}

export function notSupported(message: string): PgError {
  return new PgError({ severity: 'FATAL', code: SqlState.featureNotSupported, message })
}

export interface ClientFirst {
  /** 'n' (client cannot bind) or 'y' (client could, but thinks the server cannot). */
  cbindFlag: 'n' | 'y'
  /** client-first-message-bare: the gs2 header stripped, as it enters AuthMessage. */
  bare: string
  nonce: string
}

export interface ClientFinal {
  nonce: string
  proof: Uint8Array
  /** client-final-message-without-proof, as it enters AuthMessage. */
  withoutProof: string
}


/** SASLInitialResponse body: mechanism name (String), Int32 length of the initial
 *  response (-1 for none), the response bytes; nothing may follow (auth-sasl.c). */
/** A cursor over a SCRAM attribute list "a=value,b=value,..." (RFC 5802 section 5). */
class AttrReader {
  pos = 0
  constructor(readonly s: string) {}

  get atEnd(): boolean {
    return this.pos >= this.s.length
  }

  peek(): string {
    return this.s[this.pos] ?? ''
  }

  /** The value of attribute `attr`, which must come next; consumes the following ','. */
  value(attr: string): string {
    const c = this.peek()
    if (c !== attr) throw malformedScram(`Expected attribute "${attr}" but found "${printable(c)}".`)
    this.pos++
    if (this.peek() !== '=') throw malformedScram(`Expected character "=" for attribute "${attr}".`)
    this.pos++
    return this.rest()
  }

  /** Any attribute (a single letter, RFC 5802 "attr-val"): its name and value. */
  any(): { attr: string; value: string } {
    const attr = this.peek()
    if (!/^[A-Za-z]$/.test(attr)) throw malformedScram(`Attribute expected, but found invalid character "${printable(attr)}".`)
    this.pos++
    if (this.peek() !== '=') throw malformedScram(`Expected character "=" for attribute "${attr}".`)
    this.pos++
    return { attr, value: this.rest() }
  }

  private rest(): string {
    let end = this.s.indexOf(',', this.pos)
    if (end < 0) end = this.s.length
    const v = this.s.slice(this.pos, end)
    this.pos = end < this.s.length ? end + 1 : end
    return v
  }
}

function printable(c: string): string {
  if (c === '') return 'end of message'
  return /^[\x21-\x7e]$/.test(c) ? c : `0x${c.codePointAt(0)!.toString(16).padStart(2, '0')}`
}

/** client-first-message = gs2-header client-first-message-bare (RFC 5802 section 7),
 *  checked as auth-scram.c read_client_first_message does. */
export function parseClientFirst(s: string): ClientFirst {
  const r = new AttrReader(s)
  const flag = r.peek()
  if (flag === 'p') {
    // "p=<cb-name>": the client insists on channel binding, which needs TLS; we offered
    // only SCRAM-SHA-256, so this is the client contradicting its own mechanism choice.
    throw malformedScram('The client selected SCRAM-SHA-256 without channel binding, but the SCRAM message includes channel binding data.')
  }
  if (flag !== 'n' && flag !== 'y') throw malformedScram(`Unexpected channel-binding flag "${printable(flag)}".`)
  // 'y' means the client supports binding but believes the server does not: true here
  // (no TLS), so it is accepted; a TLS-capable server would have to refuse it.
  r.pos++
  if (r.peek() !== ',') throw malformedScram(`Comma expected, but found character "${printable(r.peek())}".`)
  r.pos++
  if (r.peek() === 'a') throw notSupported('client uses authorization identity, but it is not supported')
  if (r.peek() !== ',') throw malformedScram(`Unexpected attribute "${printable(r.peek())}" in client-first-message.`)
  r.pos++
  const bare = s.slice(r.pos)
  if (r.peek() === 'm') throw notSupported('client requires an unsupported SCRAM extension')
  // The SCRAM user name is ignored, as in PostgreSQL: the start-up packet's user is the one
  // authenticated (libpq and node-postgres send "" or "*").
  r.value('n')
  const nonce = r.value('r')
  if (nonce === '' || !/^[\x21-\x2b\x2d-\x7e]+$/.test(nonce)) throw malformedScram('Could not parse SCRAM nonce: it must be printable characters other than ",".')
  // Optional extensions may follow; none are supported, so they are read and ignored.
  while (!r.atEnd) r.any()
  // Stricter than auth-scram.c, which lets a trailing ',' pass: RFC 5802's grammar has
  // no empty attribute, and no real client sends one.
  if (s.endsWith(',')) throw malformedScram('Unexpected "," at the end of client-first-message.')
  return { cbindFlag: flag, bare, nonce }
}

/** client-final-message = channel-binding "," nonce ["," extensions] "," proof
 *  (RFC 5802 section 7), checked as auth-scram.c read_client_final_message does. */
export function parseClientFinal(s: string, cbindFlag: 'n' | 'y'): ClientFinal {
  const r = new AttrReader(s)
  // Without channel binding "c=" carries just the base64 gs2 header, which must repeat
  // the flag sent in client-first: "biws" is "n,,", "eSws" is "y,,".
  const binding = r.value('c')
  if (binding !== (cbindFlag === 'n' ? 'biws' : 'eSws')) {
    throw protocolViolation('unexpected SCRAM channel-binding attribute in client-final-message')
  }
  const nonce = r.value('r')
  let proofStart: number
  let attr: { attr: string; value: string }
  do {
    proofStart = r.pos - 1 // the ',' before the attribute, excluded from without-proof
    attr = r.any()
  } while (attr.attr !== 'p')
  const proof = base64Decode(attr.value)
  if (proof === null || proof.length !== SCRAM_KEY_BYTES) throw malformedScram('Malformed proof in client-final-message.')
  // The proof must be last: a ',' after it (even with nothing following) is garbage.
  if (!r.atEnd || s.endsWith(',')) throw malformedScram('Garbage found at the end of client-final-message.')
  return { nonce, proof, withoutProof: s.slice(0, proofStart) }
}

/** The keys of RFC 5802 section 3 for one password, salt and iteration count. */
export async function scramKeys(password: string, salt: Uint8Array, iterations: number): Promise<{ storedKey: Uint8Array; serverKey: Uint8Array }> {
  // SaltedPassword = Hi(Normalize(password), salt, i); Hi is PBKDF2 with HMAC-SHA-256.
  const saltedPassword = await pbkdf2Sha256(textEncoder.encode(password), salt, iterations)
  const clientKey = await hmacSha256(saltedPassword, textEncoder.encode('Client Key'))
  const serverKey = await hmacSha256(saltedPassword, textEncoder.encode('Server Key'))
  return { storedKey: await sha256(clientKey), serverKey }
}

// ---------------------------------------------------------------------------
// SASLprep (RFC 4013), as far as it changes the bytes PBKDF2 sees.

/** RFC 3454 table C.1.2, non-ASCII spaces: mapped to U+0020 (PostgreSQL checks this table first). */
const NON_ASCII_SPACE = /[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/gu
/** RFC 3454 table B.1, "commonly mapped to nothing". */
const MAPPED_TO_NOTHING = /[\u00AD\u034F\u1806\u180B-\u180D\u200C\u200D\u2060\uFE00-\uFE0F\uFEFF]/gu
/** RFC 4013 section 2.3 prohibited output: RFC 3454 tables C.2.1-C.9 (C.1.2 is mapped
 *  away before this runs; C.4's "U+xFFFE/xFFFF in every plane" is checked in code). */
const PROHIBITED =
  /[\u0000-\u001F\u007F-\u009F\u06DD\u070F\u180E\u2028\u2029\u2061-\u2063\u206A-\u206F\uFFF9-\uFFFF\u{1D173}-\u{1D17A}\uE000-\uF8FF\u{F0000}-\u{FFFFD}\u{100000}-\u{10FFFD}\uFDD0-\uFDEF\u2FF0-\u2FFB\u0340\u0341\u200E\u200F\u202A-\u202E\u{E0001}\u{E0020}-\u{E007F}\uD800-\uDFFF]/u

/** Map, NFKC-normalize: what node-postgres's SCRAM client does (no prohibition check). */
function saslprepMap(s: string): string {
  return s.replace(NON_ASCII_SPACE, ' ').replace(MAPPED_TO_NOTHING, '').normalize('NFKC')
}

/** PostgreSQL's pg_saslprep as the server and libpq apply it: ASCII is used as is; a
 *  result with prohibited characters falls back to the raw password. Not checked here:
 *  unassigned code points (RFC 3454 A.1) and the bidi rule (section 6). */
export function saslprep(s: string): string {
  if (/^[\x00-\x7f]*$/.test(s)) return s
  const mapped = saslprepMap(s)
  if (mapped === '' || PROHIBITED.test(mapped)) return s
  for (const ch of mapped) {
    if ((ch.codePointAt(0)! & 0xfffe) === 0xfffe) return s
  }
  return mapped
}

/** Passwords to try: as PostgreSQL/libpq prepare it, as node-postgres does, and raw.
 *  All three are the same string for ASCII passwords, so only non-ASCII passwords cost
 *  more than one PBKDF2; accepting each lets every common client log in. */
export function passwordCandidates(password: string): string[] {
  return [...new Set([saslprep(password), saslprepMap(password), password])]
}

// ---------------------------------------------------------------------------
// WebCrypto and byte helpers

/** WebCrypto takes ArrayBuffer-backed views; copying also detaches us from the
 *  caller's (possibly larger, possibly reused) input buffer. */
function own(b: Uint8Array): Uint8Array<ArrayBuffer> {
  const copy = new Uint8Array(b.length)
  copy.set(b)
  return copy
}

export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', own(data)))
}

export async function hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', own(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, own(data)))
}

async function pbkdf2Sha256(password: Uint8Array, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', own(password), 'PBKDF2', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: own(salt), iterations }, k, SCRAM_KEY_BYTES * 8)
  return new Uint8Array(bits)
}

export function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n))
}

export function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length)
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i]
  return out
}

/** Equal-length secrets compared without an early exit, so timing reveals no matching
 *  prefix. A length mismatch returns at once: lengths here are public (digest sizes, or
 *  the client's own input). */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i]
  return diff === 0
}

/** Standard base64 (RFC 4648 section 4) with padding, via btoa (browsers and Node 16+). */
export function base64Encode(b: Uint8Array): string {
  let s = ''
  for (const x of b) s += String.fromCharCode(x)
  return btoa(s)
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/

/** Strict base64: atob alone also accepts whitespace and missing padding. */
export function base64Decode(s: string): Uint8Array | null {
  if (!BASE64.test(s)) return null
  const bin = atob(s)
  const out = new Uint8Array(bin.length)
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i)
  return out
}
