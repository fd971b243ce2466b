// Module resolution for zero-cache on the tab's SQLite, in Node (run.ts):
// its SQLite binding becomes the WebAssembly one, and node:worker_threads,
// for zero-cache's own modules only, the one-thread shim, as the tab's bundle
// aliases them. Nothing of zero-cache's code changes.

const SQLITE = new URL('./zero-sqlite3.ts', import.meta.url).href
const THREADS = new URL('../../../src/zero/node/worker-threads.ts', import.meta.url).href

export async function resolve(specifier, context, next) {
  if (specifier === '@rocicorp/zero-sqlite3') return { url: SQLITE, shortCircuit: true }
  if ((specifier === 'node:worker_threads' || specifier === 'worker_threads') && context.parentURL?.includes('/@rocicorp/zero/')) {
    return { url: THREADS, shortCircuit: true }
  }
  return next(specifier, context)
}
