// `node:stream` for the tab: readable-stream 4 (Node 18's streams as a library).

import * as rs from 'readable-stream'

const s = rs as unknown as typeof import('node:stream') & { compose: unknown }
export const { Readable, Writable, Duplex, Transform, PassThrough, Stream, pipeline, finished, addAbortSignal, compose } = s
export const promises = s.promises
// readable-stream carries Node 18's 16 KiB default; zero-cache runs on Node 22, whose streams buffer 64 KiB.
// Its browser entry leaves the setter off the named exports; the Stream class carries it.
const defaults = Stream as unknown as { setDefaultHighWaterMark(objectMode: boolean, value: number): void; getDefaultHighWaterMark(objectMode: boolean): number }
defaults.setDefaultHighWaterMark(false, 64 * 1024)
export const getDefaultHighWaterMark = defaults.getDefaultHighWaterMark
export const setDefaultHighWaterMark = defaults.setDefaultHighWaterMark
export function isReadable(stream: { readable?: boolean; destroyed?: boolean }): boolean {
  return !!stream.readable && !stream.destroyed
}
export function isErrored(stream: { errored?: unknown }): boolean {
  return !!stream.errored
}
// Node's default export is the Stream class carrying the rest; readable-stream's already carries most (some as getters).
for (const [k, v] of Object.entries({ getDefaultHighWaterMark, setDefaultHighWaterMark, isReadable, isErrored })) if (!(k in Stream)) Object.assign(Stream, { [k]: v })
export default Stream
