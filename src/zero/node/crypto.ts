// `node:crypto` for the tab: what zero-cache and its dependencies call.
// Node's hashes are synchronous and WebCrypto's are not, so hashes, HMAC and
// PBKDF2 come from @noble/hashes (audited, pure JS): ws needs SHA-1 for its
// handshake, postgres.js MD5 and SCRAM-SHA-256 for passwords.

import { hmac } from '@noble/hashes/hmac.js'
import { md5, sha1 } from '@noble/hashes/legacy.js'
import { pbkdf2 as nobleKdf } from '@noble/hashes/pbkdf2.js'
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js'
import { Buffer } from './buffer'

/** What each noble hash offers: a one-shot call and an incremental state. */
interface HashFn {
  (msg: Uint8Array): Uint8Array
  create(): { update(b: Uint8Array): unknown; digest(): Uint8Array }
}
const hashes: Record<string, HashFn> = { sha1, md5, sha256, sha384, sha512 }

function hashFn(name: string): HashFn {
  const h = hashes[name.toLowerCase().replace('-', '')]
  if (!h) throw Object.assign(new Error(`Digest method not supported: ${name}`), { code: 'ERR_CRYPTO_INVALID_DIGEST' })
  return h
}

function bytes(data: string | ArrayBufferView | ArrayBuffer, encoding?: BufferEncoding): Uint8Array {
  if (typeof data === 'string') return Buffer.from(data, encoding ?? 'utf8')
  if (data instanceof ArrayBuffer) return new Uint8Array(data)
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
}

function output(digest: Uint8Array, encoding?: BufferEncoding): Buffer | string {
  const b = Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength)
  return encoding ? b.toString(encoding) : b
}

class Hash {
  #h: ReturnType<HashFn['create']>
  constructor(algorithm: string) {
    this.#h = hashFn(algorithm).create()
  }
  update(data: string | ArrayBufferView, encoding?: BufferEncoding): this {
    this.#h.update(bytes(data, encoding))
    return this
  }
  digest(encoding?: BufferEncoding): Buffer | string {
    return output(this.#h.digest(), encoding)
  }
}

class Hmac {
  #h: { update(b: Uint8Array): unknown; digest(): Uint8Array }
  constructor(algorithm: string, key: string | ArrayBufferView) {
    this.#h = hmac.create(hashFn(algorithm) as typeof sha256, bytes(key))
  }
  update(data: string | ArrayBufferView, encoding?: BufferEncoding): this {
    this.#h.update(bytes(data, encoding))
    return this
  }
  digest(encoding?: BufferEncoding): Buffer | string {
    return output(this.#h.digest(), encoding)
  }
}

export function createHash(algorithm: string): Hash {
  return new Hash(algorithm)
}
export function createHmac(algorithm: string, key: string | ArrayBufferView): Hmac {
  return new Hmac(algorithm, key)
}
export function hash(algorithm: string, data: string | ArrayBufferView, encoding: BufferEncoding = 'hex'): Buffer | string {
  return output(hashFn(algorithm)(bytes(data)), encoding)
}
export function pbkdf2Sync(password: string | ArrayBufferView, salt: string | ArrayBufferView, iterations: number, keylen: number, digest: string): Buffer {
  return output(nobleKdf(hashFn(digest) as typeof sha256, bytes(password), bytes(salt), { c: iterations, dkLen: keylen })) as Buffer
}
export function pbkdf2(password: string | ArrayBufferView, salt: string | ArrayBufferView, iterations: number, keylen: number, digest: string, cb: (e: Error | null, key?: Buffer) => void): void {
  let key: Buffer
  try {
    key = pbkdf2Sync(password, salt, iterations, keylen, digest)
  } catch (e) {
    return void queueMicrotask(() => cb(e as Error))
  }
  queueMicrotask(() => cb(null, key))
}

export function randomBytes(size: number, cb?: (e: Error | null, b: Buffer) => void): Buffer {
  const b = Buffer.alloc(size)
  // getRandomValues fills at most 64 KiB per call.
  for (let i = 0; i < size; i += 65536) crypto.getRandomValues(b.subarray(i, Math.min(size, i + 65536)))
  if (cb) queueMicrotask(() => cb(null, b))
  return b
}
export function randomFillSync<T extends ArrayBufferView>(view: T): T {
  crypto.getRandomValues(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))
  return view
}
export function randomInt(min: number, max?: number): number {
  if (max === undefined) (max = min), (min = 0)
  const range = max - min
  const [r] = crypto.getRandomValues(new Uint32Array(1))
  return min + (r! % range)
}
export function randomUUID(): string {
  return crypto.randomUUID()
}
export function getRandomValues<T extends ArrayBufferView>(view: T): T {
  return randomFillSync(view)
}
export function timingSafeEqual(a: ArrayBufferView, b: ArrayBufferView): boolean {
  const x = bytes(a)
  const y = bytes(b)
  if (x.length !== y.length) throw Object.assign(new RangeError('Input buffers must have the same byte length'), { code: 'ERR_CRYPTO_TIMING_SAFE_EQUAL_LENGTH' })
  let d = 0
  for (let i = 0; i < x.length; i++) d |= x[i]! ^ y[i]!
  return d === 0
}
export function getHashes(): string[] {
  return Object.keys(hashes)
}
export const webcrypto = globalThis.crypto
export const subtle = globalThis.crypto.subtle
export default { createHash, createHmac, hash, pbkdf2, pbkdf2Sync, randomBytes, randomFillSync, randomInt, randomUUID, getRandomValues, timingSafeEqual, getHashes, webcrypto, subtle }
