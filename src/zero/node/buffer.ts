// `node:buffer` for the tab: the `buffer` package (Node's Buffer on a
// Uint8Array), with the constants and globals Node adds beside it.

import { Buffer as B, kMaxLength, SlowBuffer } from 'buffer'

export const Buffer = B as unknown as typeof globalThis.Buffer
export type Buffer = globalThis.Buffer
export { kMaxLength, SlowBuffer }
export const constants = { MAX_LENGTH: kMaxLength, MAX_STRING_LENGTH: 2 ** 29 - 24 }
export const kStringMaxLength = constants.MAX_STRING_LENGTH
export const INSPECT_MAX_BYTES = 50
export const { Blob, File, atob, btoa } = globalThis as unknown as { Blob: typeof globalThis.Blob; File: typeof globalThis.File; atob: typeof globalThis.atob; btoa: typeof globalThis.btoa }
export function isUtf8(input: ArrayBufferView | ArrayBuffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(input)
    return true
  } catch {
    return false
  }
}
export default { Buffer, kMaxLength, SlowBuffer, constants, kStringMaxLength, INSPECT_MAX_BYTES, Blob, File, atob, btoa, isUtf8 }
