// `npm run build:zero`: zero-cache 1.9.0 as a bundle for a worker of the
// page, in dist/zero-cache/ (src/zero/tab/worker.ts is its entry).
//
// zero-cache's code is bundled unpatched. What changes is what it imports:
//   - Node's built-ins resolve to src/zero/node (a loopback network, an HTTP
//     server and client on it, a file system over the replica's files, ...);
//   - @rocicorp/zero-sqlite3 resolves to the tab's SQLite (src/zero/sqlite);
//   - `oxfmt`, a native code formatter zero-cache's query inspector calls
//     inside a try (it prints the query unformatted when it fails), to a
//     module that fails.
//
// The output is flat: zero-cache starts its workers in one process with
// `import(new URL('./main.js', import.meta.url))` from whichever chunk holds
// worker-urls.js, so each worker's entry must sit beside every chunk.

import { build, type Plugin } from 'esbuild'
import { copyFileSync, readFileSync, rmSync } from 'node:fs'
import { builtinModules, createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { zeroPackageDir } from '../src/node/zero-cache'

const OUT = process.argv.includes('--out') ? process.argv[process.argv.indexOf('--out') + 1]! : 'dist/zero-cache'
const NODE = 'src/zero/node/'

const zeroRoot = zeroPackageDir()
const SERVER = join(zeroRoot, 'out/zero-cache/src/server')
/** ws as zero-cache resolves it (its Node build: the browser build is a stub that throws). */
const WS = dirname(createRequire(join(zeroRoot, 'package.json')).resolve('ws/package.json'))

/** Each Node built-in zero-cache's dependency tree imports, and the module that stands for it in the tab. */
const builtins: Record<string, string> = {
  assert: 'assert.ts',
  'assert/strict': 'assert.ts',
  async_hooks: 'async-hooks.ts',
  buffer: 'buffer.ts',
  child_process: 'unavailable.ts',
  crypto: 'crypto.ts',
  diagnostics_channel: 'diagnostics-channel.ts',
  dns: 'unavailable.ts',
  'dns/promises': 'unavailable.ts',
  events: 'events.ts',
  fs: 'fs.ts',
  'fs/promises': 'fs-promises.ts',
  http: 'http.ts',
  http2: 'unavailable.ts',
  https: 'unavailable.ts',
  inspector: 'unavailable.ts',
  'inspector/promises': 'unavailable.ts',
  module: 'module.ts',
  net: 'net.ts',
  os: 'os.ts',
  path: 'path.ts',
  'path/posix': 'path.ts',
  perf_hooks: 'perf-hooks.ts',
  process: 'process.ts',
  querystring: 'querystring.ts',
  readline: 'unavailable.ts',
  sqlite: 'unavailable.ts',
  stream: 'stream.ts',
  'stream/promises': 'stream-promises.ts',
  'stream/web': 'stream-web.ts',
  string_decoder: 'string-decoder.ts',
  timers: 'timers.ts',
  'timers/promises': 'timers-promises.ts',
  tls: 'unavailable.ts',
  tty: 'unavailable.ts',
  url: 'url.ts',
  util: 'util.ts',
  v8: 'v8.ts',
  worker_threads: 'worker-threads.ts',
  zlib: 'zlib.ts',
}

const node = new Set(builtinModules)
const missing = new Map<string, Set<string>>()

const tab: Plugin = {
  name: 'tabgres-zero',
  setup(b) {
    b.onResolve({ filter: /.*/ }, (a) => {
      const bare = a.path.replace(/^node:/, '')
      // The polyfill packages our modules wrap resolve as packages, not as built-ins.
      if (a.importer.includes('/src/zero/node/') && !a.path.startsWith('node:')) return undefined
      if (builtins[bare]) {
        const path = join(process.cwd(), NODE, builtins[bare])
        // require() of a built-in returns the module object itself (callable for assert, a class for events):
        // the default export, which carries every named one.
        return a.kind === 'require-call' ? { path, namespace: 'required', pluginData: path } : { path }
      }
      if (a.path.startsWith('node:') || (node.has(bare) && !a.resolveDir.includes('/src/zero/'))) {
        missing.set(bare, (missing.get(bare) ?? new Set()).add(a.importer))
        return { path: join(process.cwd(), NODE, 'unavailable.ts') }
      }
      // ws's browser build is a stub that throws: zero-cache serves and dials websockets with its Node build, on our net and http.
      if (a.path === 'ws') return { path: join(WS, a.kind === 'require-call' ? 'index.js' : 'wrapper.mjs') }
      if (a.path === '@rocicorp/zero-sqlite3') return { path: join(process.cwd(), 'src/zero/sqlite/database.ts') }
      // dotenvx (zero-cache loads .env files with it) needs undici only for its account and key-storage commands.
      if (a.path === 'undici') return { path: join(process.cwd(), NODE, 'unavailable.ts') }
      if (a.path === 'oxfmt') return { path: join(process.cwd(), NODE, 'oxfmt.ts') }
      if (a.path.startsWith('@rocicorp/zero/out/')) return { path: join(zeroRoot, a.path.slice('@rocicorp/zero/'.length)) }
      return undefined
    })
    b.onLoad({ filter: /.*/, namespace: 'required' }, (a) => ({ contents: `module.exports = require(${JSON.stringify(a.pluginData)}).default`, loader: 'js', resolveDir: process.cwd() }))
  },
}

rmSync(OUT, { recursive: true, force: true })
const workers = ['main', 'change-streamer', 'replicator', 'syncer', 'reaper', 'write-worker', 'shadow-syncer', 'mutator', 'backup-watermark-reader']
const result = await build({
  entryPoints: [{ in: 'src/zero/tab/worker.ts', out: 'zero-cache' }, ...workers.map((w) => ({ in: join(SERVER, `${w}.js`), out: w }))],
  outdir: OUT,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  mainFields: ['browser', 'module', 'main'],
  conditions: ['browser', 'import', 'default'],
  inject: [join(NODE, 'globals.ts')],
  define: { 'process.env.NODE_ENV': '"production"' },
  chunkNames: '[name]-[hash]',
  minify: !process.argv.includes('--no-minify'),
  keepNames: true,
  sourcemap: 'linked',
  metafile: true,
  logLevel: 'warning',
  legalComments: 'linked',
  plugins: [tab],
})
if (missing.size) {
  for (const [m, from] of missing) console.error(`unmapped built-in ${m}, imported by ${[...from].slice(0, 3).join(', ')}`)
  process.exit(1)
}
copyFileSync('src/zero/sqlite/sqlite3.wasm', join(OUT, 'sqlite3.wasm'))
let js = 0
let gz = 0
for (const [file, o] of Object.entries(result.metafile.outputs)) {
  if (!file.endsWith('.js')) continue
  js += o.bytes
  gz += gzipSync(readFileSync(file)).length
}
const wasm = readFileSync(join(OUT, 'sqlite3.wasm'))
console.log(`zero-cache for the tab in ${OUT}/: JS ${(js / 1e6).toFixed(2)} MB (${(gz / 1e6).toFixed(2)} MB gzipped), sqlite3.wasm ${(wasm.length / 1e6).toFixed(2)} MB (${(gzipSync(wasm).length / 1e6).toFixed(2)} MB gzipped)`)
