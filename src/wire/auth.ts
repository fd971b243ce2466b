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
import { PgError } from '../protocol/errors'
import { md5Hex } from './md5'
import {
  base64Encode,
  constantTimeEqual,
  hmacSha256,
  malformedScram,
  protocolViolation,
  type ClientFirst,
  parseClientFinal,
  parseClientFirst,
  passwordCandidates,
  randomBytes,
  scramKeys,
  sha256,
  xor,
} from './scram'

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
