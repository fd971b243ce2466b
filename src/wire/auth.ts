// Server side of password authentication in the frontend/backend protocol 3.0.
// Spec: PostgreSQL docs
//   "Message Flow > Start-up"   https://www.postgresql.org/docs/current/protocol-flow.html#PROTOCOL-FLOW-START-UP
//   "Message Formats"           https://www.postgresql.org/docs/current/protocol-message-formats.html
//   "SASL Authentication"       https://www.postgresql.org/docs/current/sasl-authentication.html
// SCRAM-SHA-256: RFC 5802 (SCRAM), RFC 7677 (the SHA-256 variant), RFC 4013 (SASLprep).
// Error codes and details follow PostgreSQL's own auth.c / auth-sasl.c / auth-scram.c,
// so clients see what a real server would say.
//
// Crypto is WebCrypto only (SHA-256, HMAC, PBKDF2) plus a small MD5 (./md5), so the
// same code runs in a browser worker and in Node.

import { ByteReader, ByteWriter, ProtocolError, textEncoder, utf8 } from '../protocol/bytes'
import { PgError, SqlState } from '../protocol/errors'
import { md5Hex } from './md5'

export type AuthMethod = 'trust' | 'password' | 'md5' | 'scram-sha-256'

export interface AuthExchange {
  /** The server's first authentication request message (whole wire message: 'R', int32 length, body). */
  begin(): Promise<Uint8Array>
  /** Handle the body (after tag and length) of the client's 'p' message. Returns the server
   *  message to send next (a whole wire message) or null, and done=true once authenticated
   *  (the caller then sends AuthenticationOk itself). Throws PgError with code '28P01' on a
   *  wrong password, '08P01' on malformed input. */
  step(body: Uint8Array): Promise<{ reply: Uint8Array | null; done: boolean }>
}

/** The int32 request code after the 'R' tag of every Authentication* message ("Message Formats"). */
export const enum AuthRequest {
  Ok = 0, // AuthenticationOk
  CleartextPassword = 3, // AuthenticationCleartextPassword
  MD5Password = 5, // AuthenticationMD5Password, + 4-byte salt
  SASL = 10, // AuthenticationSASL, + NUL-terminated mechanism names, + a final NUL
  SASLContinue = 11, // AuthenticationSASLContinue, + mechanism data
  SASLFinal = 12, // AuthenticationSASLFinal, + outcome data
}

/** The only mechanism offered: no TLS, so no channel binding and no SCRAM-SHA-256-PLUS. */
export const SCRAM_MECHANISM = 'SCRAM-SHA-256'
/** PostgreSQL's default scram_iterations. */
export const SCRAM_ITERATIONS = 4096
const SCRAM_SALT_BYTES = 16
/** PostgreSQL's SCRAM_RAW_NONCE_LEN: 18 random bytes, 24 base64 characters. */
const SCRAM_NONCE_BYTES = 18
const SCRAM_KEY_BYTES = 32

/** One Authentication* message: 'R', int32 length (including itself), request code, data. */
function authenticationRequest(code: AuthRequest, data?: (w: ByteWriter) => void): Uint8Array {
  const w = new ByteWriter(64)
  w.char('R').int32(0).int32(code)
  data?.(w)
  w.patchInt32(1, w.length - 1)
  return w.toBytes()
}

/** AuthenticationOk, for the caller. */
export function authenticationOk(): Uint8Array {
  return authenticationRequest(AuthRequest.Ok)
}

export function createAuthExchange(method: Exclude<AuthMethod, 'trust'>, user: string, password: string): AuthExchange {
  switch (method) {
    case 'password':
      return new CleartextExchange(user, password)
    case 'md5':
      return new Md5Exchange(user, password)
    case 'scram-sha-256':
      return new ScramExchange(user, password)
    default:
      throw new Error(`unknown authentication method: ${String(method)}`)
  }
}

// ---------------------------------------------------------------------------
// Errors

/** PostgreSQL's message for every wrong-password outcome, whatever the method
 *  (auth.c auth_failed): the reason is logged server-side, never told to the client. */
function authFailed(user: string): PgError {
  return new PgError({
    severity: 'FATAL',
    code: '28P01',
    message: `password authentication failed for user "${user}"`,
  })
}

function protocolViolation(message: string, detail?: string): PgError {
  return new PgError({ severity: 'FATAL', code: SqlState.protocolViolation, message, detail })
}

function malformedScram(detail: string): PgError {
  return protocolViolation('malformed SCRAM message', detail)
}

function notSupported(message: string): PgError {
  return new PgError({ severity: 'FATAL', code: SqlState.featureNotSupported, message })
}

/** ByteReader's bounds errors become 08P01, as pq_getmsg* failures do in PostgreSQL. */
function parsing<T>(f: () => T): T {
  try {
    return f()
  } catch (e) {
    if (e instanceof ProtocolError) throw protocolViolation('invalid message format', e.message)
    throw e
  }
}

/** A once-only guard: a finished or failed exchange accepts no further messages. */
function unexpected(): PgError {
  return protocolViolation('unexpected password response: authentication exchange is over')
}

// ---------------------------------------------------------------------------
// Cleartext password (AuthenticationCleartextPassword)

/** PasswordMessage: the password as a NUL-terminated string, and nothing after it
 *  (auth.c recv_password_packet: "invalid password packet size"). */
function readPasswordPacket(body: Uint8Array): string {
  return parsing(() => {
    const r = new ByteReader(body)
    const s = r.cstring()
    if (r.remaining !== 0) throw protocolViolation('invalid password packet size')
    return s
  })
}

class CleartextExchange implements AuthExchange {
  private over = false
  constructor(
    private readonly user: string,
    private readonly password: string,
  ) {}

  async begin(): Promise<Uint8Array> {
    return authenticationRequest(AuthRequest.CleartextPassword)
  }

  async step(body: Uint8Array): Promise<{ reply: Uint8Array | null; done: boolean }> {
    if (this.over) throw unexpected()
    this.over = true
    const given = readPasswordPacket(body)
    // Hash both sides first: the comparison then takes the same time whatever the
    // lengths, so it reveals neither the password's length nor a matching prefix.
    const [a, b] = await Promise.all([sha256(textEncoder.encode(given)), sha256(textEncoder.encode(this.password))])
    // PostgreSQL refuses empty passwords outright (a role without one cannot log in).
    if (!constantTimeEqual(a, b) || given === '' || this.password === '') throw authFailed(this.user)
    return { reply: null, done: true }
  }
}

// ---------------------------------------------------------------------------
// MD5 (AuthenticationMD5Password)

/** PostgreSQL's md5 scheme (common/md5_common.c pg_md5_encrypt, applied twice):
 *  stored = md5hex(password || user); sent = "md5" || md5hex(stored || salt). */
export function md5PasswordResponse(user: string, password: string, salt: Uint8Array): string {
  const inner = md5Hex(textEncoder.encode(password + user))
  const innerBytes = textEncoder.encode(inner)
  const salted = new Uint8Array(innerBytes.length + salt.length)
  salted.set(innerBytes)
  salted.set(salt, innerBytes.length)
  return 'md5' + md5Hex(salted)
}

class Md5Exchange implements AuthExchange {
  private salt: Uint8Array | null = null
  private over = false
  constructor(
    private readonly user: string,
    private readonly password: string,
  ) {}

  async begin(): Promise<Uint8Array> {
    // A fresh random salt per exchange, so a captured response cannot be replayed.
    const salt = randomBytes(4)
    this.salt = salt
    return authenticationRequest(AuthRequest.MD5Password, (w) => w.bytes(salt))
  }

  async step(body: Uint8Array): Promise<{ reply: Uint8Array | null; done: boolean }> {
    if (this.over || !this.salt) throw unexpected()
    this.over = true
    const given = textEncoder.encode(readPasswordPacket(body))
    const expected = textEncoder.encode(md5PasswordResponse(this.user, this.password, this.salt))
    if (!constantTimeEqual(given, expected) || this.password === '') throw authFailed(this.user)
    return { reply: null, done: true }
  }
}

// ---------------------------------------------------------------------------
// SCRAM-SHA-256 (AuthenticationSASL, SASLContinue, SASLFinal)
//
//   S: AuthenticationSASL ["SCRAM-SHA-256"]
//   C: SASLInitialResponse  mechanism, client-first-message   "n,,n=user,r=<cnonce>"
//   S: AuthenticationSASLContinue  server-first-message       "r=<cnonce><snonce>,s=<salt>,i=4096"
//   C: SASLResponse  client-final-message                     "c=biws,r=<cnonce><snonce>,p=<proof>"
//   S: AuthenticationSASLFinal  server-final-message          "v=<ServerSignature>"
//   (caller) AuthenticationOk
//
// The server holds the plaintext password, so it derives SaltedPassword with a new
// random salt for every exchange instead of storing a verifier (RFC 5802 section 3).

type ScramState = 'init' | 'client-first' | 'client-final' | 'over'

interface ClientFirst {
  /** 'n' (client cannot bind) or 'y' (client could, but thinks the server cannot). */
  cbindFlag: 'n' | 'y'
  /** client-first-message-bare: the gs2 header stripped, as it enters AuthMessage. */
  bare: string
  nonce: string
}

interface ClientFinal {
  nonce: string
  proof: Uint8Array
  /** client-final-message-without-proof, as it enters AuthMessage. */
  withoutProof: string
}

class ScramExchange implements AuthExchange {
  private state: ScramState = 'init'
  private clientFirst: ClientFirst | null = null
  private serverFirst = ''
  private nonce = ''
  private salt: Uint8Array = new Uint8Array(0)

  constructor(
    private readonly user: string,
    private readonly password: string,
  ) {}

  async begin(): Promise<Uint8Array> {
    this.state = 'init'
    // Mechanism names, each NUL-terminated, then an empty name ends the list.
    return authenticationRequest(AuthRequest.SASL, (w) => w.cstring(SCRAM_MECHANISM).uint8(0))
  }

  async step(body: Uint8Array): Promise<{ reply: Uint8Array | null; done: boolean }> {
    const state = this.state
    // Any failure ends the exchange: the caller closes the connection anyway.
    this.state = 'over'
    switch (state) {
      case 'init': {
        const input = readSaslInitialResponse(body)
        // No initial response: ask for it with an empty SASLContinue (auth-scram.c does the same).
        if (input === null) {
          this.state = 'client-first'
          return { reply: authenticationRequest(AuthRequest.SASLContinue), done: false }
        }
        return this.onClientFirst(input)
      }
      case 'client-first':
        return this.onClientFirst(body)
      case 'client-final':
        return this.onClientFinal(body)
      default:
        throw unexpected()
    }
  }

  private onClientFirst(input: Uint8Array): { reply: Uint8Array; done: false } {
    const first = parseClientFirst(scramText(input))
    this.clientFirst = first
    this.salt = randomBytes(SCRAM_SALT_BYTES)
    this.nonce = first.nonce + base64Encode(randomBytes(SCRAM_NONCE_BYTES))
    this.serverFirst = `r=${this.nonce},s=${base64Encode(this.salt)},i=${SCRAM_ITERATIONS}`
    this.state = 'client-final'
    return { reply: authenticationRequest(AuthRequest.SASLContinue, (w) => w.bytes(textEncoder.encode(this.serverFirst))), done: false }
  }

  private async onClientFinal(input: Uint8Array): Promise<{ reply: Uint8Array; done: true }> {
    const first = this.clientFirst!
    const final = parseClientFinal(scramText(input), first.cbindFlag)
    if (final.nonce !== this.nonce) throw protocolViolation('invalid SCRAM response', 'Nonce does not match.')
    if (this.password === '') throw authFailed(this.user)

    // RFC 5802 section 3: AuthMessage = client-first-bare "," server-first "," client-final-without-proof.
    const authMessage = textEncoder.encode(`${first.bare},${this.serverFirst},${final.withoutProof}`)
    for (const candidate of passwordCandidates(this.password)) {
      const keys = await scramKeys(candidate, this.salt, SCRAM_ITERATIONS)
      // ClientKey = ClientProof XOR ClientSignature; valid iff H(ClientKey) = StoredKey.
      const clientSignature = await hmacSha256(keys.storedKey, authMessage)
      const clientKey = xor(final.proof, clientSignature)
      if (constantTimeEqual(await sha256(clientKey), keys.storedKey)) {
        const serverSignature = await hmacSha256(keys.serverKey, authMessage)
        const serverFinal = `v=${base64Encode(serverSignature)}`
        return { reply: authenticationRequest(AuthRequest.SASLFinal, (w) => w.bytes(textEncoder.encode(serverFinal))), done: true }
      }
    }
    throw authFailed(this.user)
  }
}

/** SASLInitialResponse body: mechanism name (String), Int32 length of the initial
 *  response (-1 for none), the response bytes; nothing may follow (auth-sasl.c). */
function readSaslInitialResponse(body: Uint8Array): Uint8Array | null {
  const { mechanism, input } = parsing(() => {
    const r = new ByteReader(body)
    const mechanism = r.cstring()
    const len = r.int32()
    const input = len === -1 ? null : r.bytesN(len)
    if (r.remaining !== 0) throw protocolViolation('invalid message format', 'SASLInitialResponse has trailing bytes')
    return { mechanism, input }
  })
  if (mechanism !== SCRAM_MECHANISM) {
    throw protocolViolation('client selected an invalid SASL authentication mechanism')
  }
  return input
}

/** SCRAM messages are text with no NUL (auth-scram.c: "The message is empty." /
 *  "Message length does not match input length."). */
function scramText(input: Uint8Array): string {
  if (input.length === 0) throw malformedScram('The message is empty.')
  if (input.indexOf(0) >= 0) throw malformedScram('Message length does not match input length.')
  return parsing(() => utf8(input))
}

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
async function scramKeys(password: string, salt: Uint8Array, iterations: number): Promise<{ storedKey: Uint8Array; serverKey: Uint8Array }> {
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
function passwordCandidates(password: string): string[] {
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

async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', own(data)))
}

async function hmacSha256(key: Uint8Array, data: Uint8Array): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', own(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  return new Uint8Array(await crypto.subtle.sign('HMAC', k, own(data)))
}

async function pbkdf2Sha256(password: Uint8Array, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const k = await crypto.subtle.importKey('raw', own(password), 'PBKDF2', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt: own(salt), iterations }, k, SCRAM_KEY_BYTES * 8)
  return new Uint8Array(bits)
}

function randomBytes(n: number): Uint8Array {
  return crypto.getRandomValues(new Uint8Array(n))
}

function xor(a: Uint8Array, b: Uint8Array): Uint8Array {
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
