// `node:zlib` for the tab. zero-cache compresses only when configured to
// (websocket compression, which the tab turns off: both ends are in one
// page), so compression fails with a named error if it is ever asked for.

import { unavailable } from './unavailable'

export const constants = { Z_NO_FLUSH: 0, Z_PARTIAL_FLUSH: 1, Z_SYNC_FLUSH: 2, Z_FULL_FLUSH: 3, Z_FINISH: 4, Z_DEFAULT_WINDOWBITS: 15, Z_DEFAULT_COMPRESSION: -1, Z_BEST_SPEED: 1 }
const no = (what: string) => () => unavailable(`zlib.${what} (compression)`)
export const gzip = no('gzip')
export const gunzip = no('gunzip')
export const gzipSync = no('gzipSync')
export const gunzipSync = no('gunzipSync')
export const deflateSync = no('deflateSync')
export const inflateSync = no('inflateSync')
export const createGzip = no('createGzip')
export const createGunzip = no('createGunzip')
export const createDeflate = no('createDeflate')
export const createInflate = no('createInflate')
export const createDeflateRaw = no('createDeflateRaw')
export const createInflateRaw = no('createInflateRaw')
export const createBrotliCompress = no('createBrotliCompress')
export const createBrotliDecompress = no('createBrotliDecompress')
export default { constants, gzip, gunzip, gzipSync, gunzipSync, deflateSync, inflateSync, createGzip, createGunzip, createDeflate, createInflate, createDeflateRaw, createInflateRaw, createBrotliCompress, createBrotliDecompress }
