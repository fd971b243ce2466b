// sqlite3.wasm in a page or worker: fetched beside this module (bundlers see
// the `new URL(..., import.meta.url)` and emit the file) and compiled while
// it downloads. Compiled once per worker; each instance shares the module.

let compiled: Promise<WebAssembly.Module> | undefined

export function compileSqlite(): Promise<WebAssembly.Module> {
  compiled ??= WebAssembly.compileStreaming(fetch(new URL('./sqlite3.wasm', import.meta.url))).catch((e: unknown) => {
    compiled = undefined
    throw e
  })
  return compiled
}
