// `node:util` for the tab: the `util` package (browserify's port of Node's),
// with what it predates: styleText, stripVTControlCharacters, TextEncoder,
// isDeepStrictEqual, parseArgs-free helpers.

import util from 'util'

export const { format, deprecate, debuglog, inspect, types, inherits, promisify, callbackify, isArray, isBuffer } = util as typeof import('node:util')
export const debug = debuglog
export const { TextEncoder, TextDecoder } = globalThis

const ansi = /\u001b\[[0-9;]*[A-Za-z]|\u001b\][^\u0007]*\u0007/g
export function stripVTControlCharacters(s: string): string {
  return s.replace(ansi, '')
}

/** Text without styling: zero-cache's logs go to the console of the page, which shows no ANSI codes. */
export function styleText(_format: string | string[], text: string): string {
  return text
}

export function isDeepStrictEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  if (typeof a !== 'object' || typeof b !== 'object' || !a || !b) return false
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false
  const ka = Reflect.ownKeys(a)
  const kb = Reflect.ownKeys(b)
  if (ka.length !== kb.length) return false
  return ka.every((k) => isDeepStrictEqual((a as Record<PropertyKey, unknown>)[k], (b as Record<PropertyKey, unknown>)[k]))
}

export function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve(), { once: true })))
}

export function getSystemErrorName(errno: number): string {
  return `Unknown system error ${errno}`
}

export default { ...(util as object), format, deprecate, debuglog, debug, inspect, types, inherits, promisify, callbackify, TextEncoder, TextDecoder, stripVTControlCharacters, styleText, isDeepStrictEqual, aborted, getSystemErrorName }
