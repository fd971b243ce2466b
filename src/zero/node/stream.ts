// `node:stream` for the tab: readable-stream 4 (Node 18's streams as a library).

import * as rs from 'readable-stream'

const s = rs as unknown as typeof import('node:stream') & { compose: unknown }
export const { Readable, Writable, Duplex, Transform, PassThrough, Stream, pipeline, finished, addAbortSignal, compose } = s
export const promises = s.promises
export function getDefaultHighWaterMark(objectMode: boolean): number {
  return objectMode ? 16 : 64 * 1024
}
export function setDefaultHighWaterMark(): void {}
export function isReadable(stream: { readable?: boolean; destroyed?: boolean }): boolean {
  return !!stream.readable && !stream.destroyed
}
export function isErrored(stream: { errored?: unknown }): boolean {
  return !!stream.errored
}
// Node's default export is the Stream class carrying the rest; readable-stream's already carries most (some as getters).
for (const [k, v] of Object.entries({ getDefaultHighWaterMark, setDefaultHighWaterMark, isReadable, isErrored })) if (!(k in Stream)) Object.assign(Stream, { [k]: v })
export default Stream
