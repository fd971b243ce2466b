// Server-side authentication: MD5 (RFC 1321 vectors), PostgreSQL's md5 password
// response, cleartext, SCRAM-SHA-256 against an independent client built here on
// node:crypto (itself checked against RFC 7677's example), and end to end with the
// real `pg` client over TCP.
// Spec: PostgreSQL docs "Message Flow > Start-up", "Message Formats", "SASL Authentication".

import { afterAll, describe, expect, it } from 'vitest'
import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { createServer, type Server, type Socket } from 'node:net'
import { PgError } from '../protocol/errors'
import { authenticationOk, createAuthExchange, md5PasswordResponse, type AuthExchange, type AuthMethod } from './auth'
import { base64Decode, base64Encode, constantTimeEqual, saslprep } from './scram'
import { md5, md5Hex } from './md5'

const enc = new TextEncoder()
const dec = new TextDecoder()

// ---------------------------------------------------------------------------
// Helpers: independent encoders/decoders for the few messages involved.

/** Split an 'R' message into its request code and data, checking the framing. */
function authRequest(msg: Uint8Array): { code: number; data: Uint8Array } {
  const v = new DataView(msg.buffer, msg.byteOffset, msg.byteLength)
  expect(String.fromCharCode(msg[0])).toBe('R')
  expect(v.getInt32(1)).toBe(msg.length - 1)
  return { code: v.getInt32(5), data: msg.subarray(9) }
}

function cstr(s: string): Uint8Array {
  return new Uint8Array([...enc.encode(s), 0])
}

/** SASLInitialResponse body: mechanism, Int32 length (-1: none), data. */
function saslInitial(mechanism: string, data: string | null): Uint8Array {
  const m = cstr(mechanism)
  const d = data === null ? new Uint8Array(0) : enc.encode(data)
  const out = new Uint8Array(m.length + 4 + d.length)
  out.set(m)
  new DataView(out.buffer).setInt32(m.length, data === null ? -1 : d.length)
  out.set(d, m.length + 4)
  return out
}

async function pgError(p: Promise<unknown>, code: string): Promise<PgError> {
  try {
    await p
  } catch (e) {
    expect(e).toBeInstanceOf(PgError)
    expect((e as PgError).code).toBe(code)
    return e as PgError
  }
  throw new Error(`expected PgError ${code}`)
}

/** A SCRAM-SHA-256 client on node:crypto, written from RFC 5802 section 3 and 7. */
function scramClient(password: string, opts: { nonce?: string; user?: string; flag?: 'n' | 'y' } = {}) {
  const gs2 = `${opts.flag ?? 'n'},,`
  const nonce = opts.nonce ?? randomBytes(18).toString('base64')
  const bare = `n=${opts.user ?? '*'},r=${nonce}`
  return {
    nonce,
    first: gs2 + bare,
    final(serverFirst: string, extensions = '') {
      const attrs = new Map(serverFirst.split(',').map((a) => [a[0], a.slice(2)]))
      const r = attrs.get('r')!
      const salt = Buffer.from(attrs.get('s')!, 'base64')
      const i = Number(attrs.get('i'))
      const salted = pbkdf2Sync(password, salt, i, 32, 'sha256')
      const clientKey = createHmac('sha256', salted).update('Client Key').digest()
      const storedKey = createHash('sha256').update(clientKey).digest()
      const withoutProof = `c=${Buffer.from(gs2).toString('base64')},r=${r}${extensions}`
      const authMessage = `${bare},${serverFirst},${withoutProof}`
      const signature = createHmac('sha256', storedKey).update(authMessage).digest()
      const proof = Buffer.from(clientKey.map((b, k) => b ^ signature[k]))
      const serverKey = createHmac('sha256', salted).update('Server Key').digest()
      return {
        withoutProof,
        proof: proof.toString('base64'),
        message: `${withoutProof},p=${proof.toString('base64')}`,
        serverSignature: createHmac('sha256', serverKey).update(authMessage).digest('base64'),
      }
    },
  }
}

/** Start a SCRAM exchange up to the server-first message. */
async function scramStart(ex: AuthExchange, client: ReturnType<typeof scramClient>): Promise<string> {
  const begin = authRequest(await ex.begin())
  expect(begin.code).toBe(10)
  const { reply, done } = await ex.step(saslInitial('SCRAM-SHA-256', client.first))
  expect(done).toBe(false)
  const cont = authRequest(reply!)
  expect(cont.code).toBe(11)
  return dec.decode(cont.data)
}

// ---------------------------------------------------------------------------

describe('md5 (RFC 1321)', () => {
  // RFC 1321 appendix A.5 test suite.
  const vectors: [string, string][] = [
    ['', 'd41d8cd98f00b204e9800998ecf8427e'],
    ['a', '0cc175b9c0f1b6a831c399e269772661'],
    ['abc', '900150983cd24fb0d6963f7d28e17f72'],
    ['message digest', 'f96b697d7cb7938d525a2f31aaf161d0'],
    ['abcdefghijklmnopqrstuvwxyz', 'c3fcd3d76192e4007dfb496cca67e13b'],
    ['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'd174ab98d277d9f5a5611c2c9f419d9f'],
    ['12345678901234567890123456789012345678901234567890123456789012345678901234567890', '57edf4a22be3c955ac49da2e2107b67a'],
  ]
  it.each(vectors)('md5(%j)', (input, hex) => {
    expect(md5Hex(enc.encode(input))).toBe(hex)
  })

  it('matches node:crypto around every padding boundary and on multi-block input', () => {
    for (const n of [55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 4096 + 3]) {
      const data = randomBytes(n)
      expect(md5Hex(data), `length ${n}`).toBe(createHash('md5').update(data).digest('hex'))
    }
    expect(md5(new Uint8Array(0))).toHaveLength(16)
  })

  it('reads the input through its own view (subarrays with an offset)', () => {
    const big = enc.encode('xxabcxx')
    expect(md5Hex(big.subarray(2, 5))).toBe('900150983cd24fb0d6963f7d28e17f72')
  })
})

describe('helpers', () => {
  it('base64 round trip and strict decoding', () => {
    for (const n of [0, 1, 2, 3, 16, 32]) {
      const b = randomBytes(n)
      const s = base64Encode(b)
      expect(s).toBe(Buffer.from(b).toString('base64'))
      expect(base64Decode(s)).toEqual(new Uint8Array(b))
    }
    for (const bad of ['abc', 'ab=c', 'a b=', 'ab==\n', '====', 'ab-_']) expect(base64Decode(bad), bad).toBeNull()
  })

  it('constantTimeEqual', () => {
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]))).toBe(true)
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3]))).toBe(false)
    expect(constantTimeEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2, 3]))).toBe(false)
  })

  it('saslprep: ASCII unchanged, spaces mapped, NFKC, prohibited falls back to raw', () => {
    expect(saslprep('pencil')).toBe('pencil')
    expect(saslprep('a\tb')).toBe('a\tb') // ASCII, even control characters, is used as is
    expect(saslprep('pass\u00a0word')).toBe('pass word')
    expect(saslprep('I\u00adX')).toBe('IX')
    expect(saslprep('\ufb01x')).toBe('fix')
    expect(saslprep('\u2168')).toBe('IX')
    expect(saslprep('\u00e9\u0007')).toBe('\u00e9\u0007') // prohibited control: raw
    expect(saslprep('\u00e9\ue000')).toBe('\u00e9\ue000') // private use: raw
  })

  it('authenticationOk is R/0', () => {
    expect(Array.from(authenticationOk())).toEqual([0x52, 0, 0, 0, 8, 0, 0, 0, 0])
  })
})

describe('cleartext password', () => {
  it('asks with R/3 and accepts the right password', async () => {
    const ex = createAuthExchange('password', 'alice', 'secret')
    expect(Array.from(await ex.begin())).toEqual([0x52, 0, 0, 0, 8, 0, 0, 0, 3])
    expect(await ex.step(cstr('secret'))).toEqual({ reply: null, done: true })
  })

  it('accepts a non-ASCII password byte for byte', async () => {
    const ex = createAuthExchange('password', 'alice', 'pässwörd ✓')
    await ex.begin()
    expect((await ex.step(cstr('pässwörd ✓'))).done).toBe(true)
  })

  it('rejects a wrong, a longer, a shorter and an empty password with 28P01', async () => {
    for (const given of ['Secret', 'secret1', 'secre', '']) {
      const ex = createAuthExchange('password', 'alice', 'secret')
      await ex.begin()
      const e = await pgError(ex.step(cstr(given)), '28P01')
      expect(e.message).toBe('password authentication failed for user "alice"')
    }
  })

  it('an empty configured password admits nobody, as a role without a password', async () => {
    const ex = createAuthExchange('password', 'alice', '')
    await ex.begin()
    await pgError(ex.step(cstr('')), '28P01')
  })

  it('rejects a packet without its NUL, or with bytes after it, with 08P01', async () => {
    for (const body of [enc.encode('secret'), new Uint8Array([...cstr('secret'), 0x41]), new Uint8Array(0)]) {
      const ex = createAuthExchange('password', 'alice', 'secret')
      await ex.begin()
      await pgError(ex.step(body), '08P01')
    }
  })

  it('accepts only one password message', async () => {
    const ex = createAuthExchange('password', 'alice', 'secret')
    await ex.begin()
    await ex.step(cstr('secret'))
    await pgError(ex.step(cstr('secret')), '08P01')
  })
})

describe('md5 password', () => {
  /** The response computed independently with node:crypto. */
  function oracle(user: string, password: string, salt: Uint8Array): string {
    const inner = createHash('md5').update(password + user).digest('hex')
    return 'md5' + createHash('md5').update(Buffer.concat([Buffer.from(inner), salt])).digest('hex')
  }

  it('asks with R/5 and a fresh 4-byte salt each time', async () => {
    const a = authRequest(await createAuthExchange('md5', 'alice', 'secret').begin())
    const b = authRequest(await createAuthExchange('md5', 'alice', 'secret').begin())
    expect(a.code).toBe(5)
    expect(a.data).toHaveLength(4)
    expect(b.data).toHaveLength(4)
    expect(Array.from(a.data)).not.toEqual(Array.from(b.data)) // 2^-32 chance of a false failure
  })

  it('accepts "md5" + md5hex(md5hex(password + user) + salt)', async () => {
    for (const [user, password] of [
      ['alice', 'secret'],
      ['bøb', 'pässwörd'],
    ]) {
      const ex = createAuthExchange('md5', user, password)
      const { data: salt } = authRequest(await ex.begin())
      const response = oracle(user, password, salt)
      expect(response).toMatch(/^md5[0-9a-f]{32}$/)
      expect(await ex.step(cstr(response))).toEqual({ reply: null, done: true })
    }
  })

  it('matches fixed values (computed once with node:crypto)', () => {
    const salt = new Uint8Array([1, 2, 3, 4])
    expect(md5Hex(enc.encode('secretalice'))).toBe('4a0a68b43b6cd5cf266fa02f196e2371') // the stored form
    expect(md5PasswordResponse('alice', 'secret', salt)).toBe('md598a0412b9c31436fc53776e863350083')
    expect(oracle('alice', 'secret', salt)).toBe('md598a0412b9c31436fc53776e863350083')
  })

  it('rejects a wrong password, a wrong user and a response to another salt with 28P01', async () => {
    const cases: ((salt: Uint8Array) => string)[] = [
      (salt) => oracle('alice', 'wrong', salt),
      (salt) => oracle('mallory', 'secret', salt),
      () => oracle('alice', 'secret', new Uint8Array([0, 0, 0, 0])),
      () => 'secret',
      (salt) => oracle('alice', 'secret', salt).toUpperCase(),
    ]
    for (const make of cases) {
      const ex = createAuthExchange('md5', 'alice', 'secret')
      const { data: salt } = authRequest(await ex.begin())
      const e = await pgError(ex.step(cstr(make(salt))), '28P01')
      expect(e.message).toBe('password authentication failed for user "alice"')
    }
  })

  it('rejects a malformed packet with 08P01', async () => {
    const ex = createAuthExchange('md5', 'alice', 'secret')
    await ex.begin()
    await pgError(ex.step(enc.encode('md5abc')), '08P01')
  })
})

describe('SCRAM-SHA-256', () => {
  it('the test client reproduces RFC 7677 section 3', () => {
    const c = scramClient('pencil', { user: 'user', nonce: 'rOprNGfwEbeRWgbNEkqO' })
    expect(c.first).toBe('n,,n=user,r=rOprNGfwEbeRWgbNEkqO')
    const f = c.final('r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096')
    expect(f.message).toBe('c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=')
    expect(f.serverSignature).toBe('6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=')
  })

  it('offers exactly SCRAM-SHA-256 in AuthenticationSASL', async () => {
    const { code, data } = authRequest(await createAuthExchange('scram-sha-256', 'alice', 'secret').begin())
    expect(code).toBe(10)
    expect(Array.from(data)).toEqual([...cstr('SCRAM-SHA-256'), 0])
  })

  for (const flag of ['n', 'y'] as const) {
    it(`completes a full exchange with gs2 header "${flag},,"`, async () => {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      const client = scramClient('secret', { flag })
      const serverFirst = await scramStart(ex, client)

      const m = /^r=([^,]+),s=([^,]+),i=(\d+)$/.exec(serverFirst)!
      expect(m).not.toBeNull()
      expect(m[1].startsWith(client.nonce)).toBe(true)
      expect(m[1].length).toBeGreaterThan(client.nonce.length)
      expect(Buffer.from(m[2], 'base64')).toHaveLength(16)
      expect(m[3]).toBe('4096')

      const final = client.final(serverFirst)
      const { reply, done } = await ex.step(enc.encode(final.message))
      expect(done).toBe(true)
      const fin = authRequest(reply!)
      expect(fin.code).toBe(12)
      expect(dec.decode(fin.data)).toBe(`v=${final.serverSignature}`)

      await pgError(ex.step(enc.encode(final.message)), '08P01') // nothing after the end
    })
  }

  it('uses a fresh salt and server nonce per exchange', async () => {
    const a = await scramStart(createAuthExchange('scram-sha-256', 'alice', 'secret'), scramClient('secret', { nonce: 'same' }))
    const b = await scramStart(createAuthExchange('scram-sha-256', 'alice', 'secret'), scramClient('secret', { nonce: 'same' }))
    expect(a).not.toBe(b)
    expect(a.split(',')[1]).not.toBe(b.split(',')[1])
  })

  it('ignores the SCRAM user name and optional extensions, as PostgreSQL does', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    const client = scramClient('secret', { user: 'someone=2Celse' })
    const begin = authRequest(await ex.begin())
    expect(begin.code).toBe(10)
    const cont = await ex.step(saslInitial('SCRAM-SHA-256', client.first + ',x=ext'))
    const serverFirst = dec.decode(authRequest(cont.reply!).data)
    // The extension is part of client-first-bare, so it enters the AuthMessage too.
    const bare = client.first.slice(3) + ',x=ext'
    const f = scramClientWithBare('secret', bare, 'n,,', serverFirst, ',y=ext2')
    const { done } = await ex.step(enc.encode(f.message))
    expect(done).toBe(true)
  })

  it('asks for the client-first message with an empty SASLContinue when the initial response is absent', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    await ex.begin()
    const empty = await ex.step(saslInitial('SCRAM-SHA-256', null))
    const r = authRequest(empty.reply!)
    expect(r.code).toBe(11)
    expect(r.data).toHaveLength(0)
    const client = scramClient('secret')
    const cont = await ex.step(enc.encode(client.first))
    const serverFirst = dec.decode(authRequest(cont.reply!).data)
    const final = client.final(serverFirst)
    expect((await ex.step(enc.encode(final.message))).done).toBe(true)
  })

  it('rejects a wrong password with 28P01 after the client-final message', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    const client = scramClient('Secret')
    const serverFirst = await scramStart(ex, client)
    const e = await pgError(ex.step(enc.encode(client.final(serverFirst).message)), '28P01')
    expect(e.message).toBe('password authentication failed for user "alice"')
  })

  it('rejects a tampered proof and a proof for another AuthMessage with 28P01', async () => {
    {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      const client = scramClient('secret')
      const f = client.final(await scramStart(ex, client))
      const proof = Buffer.from(f.proof, 'base64')
      proof[0] ^= 1
      await pgError(ex.step(enc.encode(`${f.withoutProof},p=${proof.toString('base64')}`)), '28P01')
    }
    {
      // The proof signs the whole AuthMessage: adding an extension after signing breaks it.
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      const client = scramClient('secret')
      const f = client.final(await scramStart(ex, client))
      await pgError(ex.step(enc.encode(`${f.withoutProof},x=1,p=${f.proof}`)), '28P01')
    }
  })

  it('accepts a non-ASCII password SASLprep-ed (libpq, node-postgres) or raw', async () => {
    const password = 'p\u00e4ss\u00a0\ufb01x'
    for (const sent of ['p\u00e4ss fix', password]) {
      const ex = createAuthExchange('scram-sha-256', 'alice', password)
      const client = scramClient(sent)
      const serverFirst = await scramStart(ex, client)
      expect((await ex.step(enc.encode(client.final(serverFirst).message))).done).toBe(true)
    }
    const ex = createAuthExchange('scram-sha-256', 'alice', password)
    const client = scramClient('pass fix')
    await pgError(ex.step(enc.encode(client.final(await scramStart(ex, client)).message)), '28P01')
  })

  it('rejects channel binding "p=..." (we offer no -PLUS) with 08P01', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    await ex.begin()
    const e = await pgError(ex.step(saslInitial('SCRAM-SHA-256', 'p=tls-server-end-point,,n=,r=abcdef')), '08P01')
    expect(e.message).toBe('malformed SCRAM message')
  })

  it('rejects SCRAM-SHA-256-PLUS and unknown mechanisms with 08P01', async () => {
    for (const mech of ['SCRAM-SHA-256-PLUS', 'SCRAM-SHA-1', '']) {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      await ex.begin()
      await pgError(ex.step(saslInitial(mech, 'n,,n=,r=abc')), '08P01')
    }
  })

  it('rejects an authorization identity and mandatory extensions with 0A000', async () => {
    for (const first of ['n,a=bob,n=,r=abc', 'n,,m=ext,n=,r=abc']) {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      await ex.begin()
      await pgError(ex.step(saslInitial('SCRAM-SHA-256', first)), '0A000')
    }
  })

  it('rejects malformed SASLInitialResponse framing with 08P01', async () => {
    const good = saslInitial('SCRAM-SHA-256', 'n,,n=,r=abc')
    const bodies = [
      good.subarray(0, good.length - 1), // length says more than there is
      new Uint8Array([...good, 0x41]), // trailing byte
      enc.encode('SCRAM-SHA-256'), // no NUL, no length
      cstr('SCRAM-SHA-256'), // no length
      saslInitial('SCRAM-SHA-256', ''), // empty message
      saslInitial('SCRAM-SHA-256', 'n,,n=,r=a\u0000bc'), // NUL inside
      (() => {
        const b = saslInitial('SCRAM-SHA-256', 'n,,n=,r=abc')
        new DataView(b.buffer).setInt32(14, -2) // negative length other than -1
        return b
      })(),
    ]
    for (const body of bodies) {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      await ex.begin()
      await pgError(ex.step(body), '08P01')
    }
  })

  it('rejects malformed client-first messages with 08P01', async () => {
    const firsts = [
      'x,,n=,r=abc', // unknown channel-binding flag
      'n', // ends after the flag
      'n;,n=,r=abc', // no comma after the flag
      'n,x,n=,r=abc', // junk where authzid would be
      'n,,r=abc', // user name missing
      'n,,n=', // nonce missing
      'n,,n=,r=', // empty nonce
      'n,,n=,r=ab\u00e9', // non-printable nonce
      'n,,n=,x=abc', // wrong attribute
      'n,,n=,r=abc,', // trailing comma: an empty attribute
      'n,,n=,r=abc,1=x', // extension name is not a letter
      'n,,n,r=abc', // no '='
    ]
    for (const first of firsts) {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      await ex.begin()
      await pgError(ex.step(saslInitial('SCRAM-SHA-256', first)), '08P01')
    }
  })

  it('rejects malformed client-final messages with 08P01', async () => {
    const finals: ((f: ReturnType<ReturnType<typeof scramClient>['final']>, nonce: string) => string)[] = [
      (f, r) => `c=eSws,r=${r},p=${f.proof}`, // flag changed from n to y
      (f, r) => `c=cD10bHMtc2VydmVyLWVuZC1wb2ludCws,r=${r},p=${f.proof}`, // channel-binding data
      (f) => `c=biws,r=other,p=${f.proof}`, // nonce mismatch
      (f, r) => `c=biws,r=${r.slice(0, -1)},p=${f.proof}`, // server part cut
      (f, r) => `r=${r},p=${f.proof}`, // channel binding missing
      (_, r) => `c=biws,r=${r}`, // proof missing
      (_, r) => `c=biws,r=${r},p=`, // empty proof
      (_, r) => `c=biws,r=${r},p=AAAA`, // proof too short
      (f, r) => `c=biws,r=${r},p=${f.proof.slice(0, -1)}`, // bad base64
      (f, r) => `c=biws,r=${r},p=${f.proof},x=1`, // garbage after the proof
      (f, r) => `c=biws,r=${r},p=${f.proof},`, // trailing comma
      (f) => f.message + '\u0000', // NUL
      () => '', // empty
    ]
    for (const make of finals) {
      const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
      const client = scramClient('secret')
      const serverFirst = await scramStart(ex, client)
      const nonce = serverFirst.split(',')[0].slice(2)
      await pgError(ex.step(enc.encode(make(client.final(serverFirst), nonce))), '08P01')
    }
  })

  it('rejects invalid UTF-8 with 08P01', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    await ex.begin()
    const body = saslInitial('SCRAM-SHA-256', 'n,,n=,r=abc')
    body[body.length - 1] = 0xff
    await pgError(ex.step(body), '08P01')
  })

  it('a failed exchange accepts nothing more', async () => {
    const ex = createAuthExchange('scram-sha-256', 'alice', 'secret')
    await ex.begin()
    await pgError(ex.step(saslInitial('SCRAM-SHA-256', 'x,,')), '08P01')
    await pgError(ex.step(saslInitial('SCRAM-SHA-256', 'n,,n=,r=abc')), '08P01')
  })
})

/** Like scramClient().final, for a client-first-bare the test builds itself. */
function scramClientWithBare(password: string, bare: string, gs2: string, serverFirst: string, extensions: string) {
  const attrs = new Map(serverFirst.split(',').map((a) => [a[0], a.slice(2)]))
  const salted = pbkdf2Sync(password, Buffer.from(attrs.get('s')!, 'base64'), Number(attrs.get('i')), 32, 'sha256')
  const clientKey = createHmac('sha256', salted).update('Client Key').digest()
  const storedKey = createHash('sha256').update(clientKey).digest()
  const withoutProof = `c=${Buffer.from(gs2).toString('base64')},r=${attrs.get('r')}${extensions}`
  const signature = createHmac('sha256', storedKey).update(`${bare},${serverFirst},${withoutProof}`).digest()
  const proof = Buffer.from(clientKey.map((b, k) => b ^ signature[k]))
  return { message: `${withoutProof},p=${proof.toString('base64')}` }
}

// ---------------------------------------------------------------------------
// End to end with node-postgres over TCP.

interface PgClient {
  connect(): Promise<void>
  end(): Promise<void>
}
type PgModule = { Client: new (config: Record<string, unknown>) => PgClient }

const require = createRequire(import.meta.url)
let pg: PgModule | null = null
try {
  pg = require('pg') as PgModule
} catch {
  pg = null
}

/** Just enough of a server: start-up, the exchange under test, AuthenticationOk,
 *  ReadyForQuery 'I'; an ErrorResponse and close on failure; close on Terminate. */
function tinyServer(method: Exclude<AuthMethod, 'trust'>, password: string) {
  const sockets = new Set<Socket>()
  const outcomes: string[] = []
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => {})
    let buf = Buffer.alloc(0)
    let exchange: AuthExchange | null = null
    let started = false
    let queue = Promise.resolve()

    const fail = (e: unknown) => {
      const err = e as PgError
      outcomes.push(err.code ?? 'error')
      const fields = Buffer.concat([
        Buffer.from('SFATAL\0'),
        Buffer.from(`C${err.code}\0`),
        Buffer.from(`M${err.message}\0`),
        Buffer.from([0]),
      ])
      const head = Buffer.alloc(5)
      head.write('E')
      head.writeInt32BE(fields.length + 4, 1)
      socket.end(Buffer.concat([head, fields]))
    }

    const handle = async (tag: string | null, body: Buffer) => {
      if (tag === null) {
        const code = body.readInt32BE(0)
        if (code === 80877103) return void socket.write('N') // SSLRequest: no TLS
        const parts = body.subarray(4).toString('utf8').split('\0')
        const params = new Map<string, string>()
        for (let i = 0; i + 1 < parts.length; i += 2) if (parts[i]) params.set(parts[i], parts[i + 1])
        started = true
        exchange = createAuthExchange(method, params.get('user')!, password)
        return void socket.write(await exchange.begin())
      }
      if (tag === 'X') return void socket.end()
      if (tag !== 'p' || !exchange) return fail(new PgError({ code: '08P01', message: 'unexpected message' }))
      try {
        const { reply, done } = await exchange.step(new Uint8Array(body))
        if (reply) socket.write(reply)
        if (done) {
          outcomes.push('ok')
          socket.write(authenticationOk())
          socket.write(Buffer.from([0x5a, 0, 0, 0, 5, 0x49])) // ReadyForQuery 'I'
        }
      } catch (e) {
        fail(e)
      }
    }

    socket.on('data', (chunk) => {
      buf = Buffer.concat([buf, chunk])
      for (;;) {
        if (!started) {
          if (buf.length < 4) break
          const len = buf.readInt32BE(0)
          if (buf.length < len) break
          const body = buf.subarray(4, len)
          buf = buf.subarray(len)
          // The start-up packet must be handled before the next one is framed.
          if (body.readInt32BE(0) !== 80877103) started = true
          queue = queue.then(() => handle(null, body))
        } else {
          if (buf.length < 5) break
          const len = buf.readInt32BE(1)
          if (buf.length < len + 1) break
          const tag = String.fromCharCode(buf[0])
          const body = buf.subarray(5, len + 1)
          buf = buf.subarray(len + 1)
          queue = queue.then(() => handle(tag, body))
        }
      }
    })
  })
  return {
    outcomes,
    async listen(): Promise<number> {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      return (server.address() as { port: number }).port
    },
    async close(): Promise<void> {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

describe.skipIf(pg === null)('end to end with the pg client', () => {
  const servers: ReturnType<typeof tinyServer>[] = []
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.close()))
  })

  async function connect(method: Exclude<AuthMethod, 'trust'>, serverPassword: string, clientPassword: string) {
    const server = tinyServer(method, serverPassword)
    servers.push(server)
    const port = await server.listen()
    const client = new pg!.Client({ host: '127.0.0.1', port, user: 'alice', password: clientPassword, database: 'tabgres' })
    return { server, client }
  }

  for (const method of ['password', 'md5', 'scram-sha-256'] as const) {
    it(`${method}: connects and ends cleanly`, async () => {
      const { server, client } = await connect(method, 'secret', 'secret')
      await client.connect()
      await client.end()
      expect(server.outcomes).toEqual(['ok'])
    })

    it(`${method}: a wrong password makes connect reject with 28P01`, async () => {
      const { server, client } = await connect(method, 'secret', 'wrong')
      const err = await client.connect().then(
        () => null,
        (e: { code?: string; message: string }) => e,
      )
      expect(err).not.toBeNull()
      expect(err!.code).toBe('28P01')
      expect(err!.message).toBe('password authentication failed for user "alice"')
      expect(server.outcomes).toEqual(['28P01'])
      await client.end().catch(() => {})
    })
  }

  it('scram-sha-256: a non-ASCII password (pg SASLpreps it)', async () => {
    const { server, client } = await connect('scram-sha-256', 'p\u00e4ss\u00a0\ufb01x', 'p\u00e4ss\u00a0\ufb01x')
    await client.connect()
    await client.end()
    expect(server.outcomes).toEqual(['ok'])
  })
})
