// Globals that Node code takes for granted and a worker lacks, injected into
// every module of the zero-cache bundle (scripts/build-zero.ts): `process`,
// `Buffer`, `global`, `setImmediate`, and
// timers whose handles have Node's `unref()`.

import { Buffer } from './buffer'
import { process } from './process'
import { clearImmediate, clearInterval, clearTimeout, setImmediate, setInterval, setTimeout } from './timers'

export { Buffer, process, setImmediate, clearImmediate, setTimeout, clearTimeout, setInterval, clearInterval }
export const global = globalThis
