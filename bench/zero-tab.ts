// npm run bench:zero-tab [-- --rows 20000 --writes 100]
// zero-cache 1.9.0 in a worker of a Chromium page, on three tabgres
// databases of the page, with a Zero client in the page (bench/zero-tab/):
// boot (first visit with an initial sync of --rows rows; a restart on the
// replica kept in IndexedDB), the Zero client's first result, and write in
// tabgres → live Zero query updated, beside the INSERT's own round trip
// measured in the same run. Also the bundle's size (gzip). Prints a table
// and writes bench/results/zero-tab.json.

import { execFileSync } from 'node:child_process'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { gzipSync } from 'node:zlib'
import { createServer } from 'vite'
import { benchSession, runInPage, waitForPage } from './browsers'
import { freePort } from '../test/support/free-port'
import { templateAsset } from '../scripts/vite-template'
import type { ZeroTabResults } from './zero-tab/page'

const { values } = parseArgs({ options: { rows: { type: 'string', default: '20000' }, writes: { type: 'string', default: '100' } } })
const root = fileURLToPath(new URL('..', import.meta.url))
const BUNDLE = join(root, 'dist/public/zero-cache')

execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-zero.ts', '--out', BUNDLE], { stdio: 'inherit', cwd: root })
let js = 0
let jsGz = 0
let wasmGz = 0
for (const f of readdirSync(BUNDLE)) {
  const bytes = readFileSync(join(BUNDLE, f))
  if (f.endsWith('.js')) (js += bytes.length), (jsGz += gzipSync(bytes).length)
  if (f.endsWith('.wasm')) wasmGz += gzipSync(bytes).length
}

const server = await createServer({
  configFile: false,
  root,
  logLevel: 'warn',
  clearScreen: false,
  cacheDir: 'node_modules/.vite-bench-zero-tab',
  publicDir: 'dist/public',
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink', '@rocicorp/zero'], entries: ['bench/zero-tab/index.html'] },
  worker: { format: 'es' },
  plugins: [templateAsset()],
  server: { host: '127.0.0.1', port: await freePort(), strictPort: true, hmr: false, watch: null },
})
await server.listen()
// Chromium only for now (test/support/browsers drives the others too); the page reports its errors and warnings itself.
const session = await benchSession('chromium')
let r: ZeroTabResults
try {
  const tab = await session.newTab()
  await tab.goto(`${server.resolvedUrls!.local[0]}bench/zero-tab/index.html`)
  await waitForPage(tab, 'runZeroTab')
  r = await runInPage<ZeroTabResults>(tab, 'runZeroTab', [{ rows: Number(values.rows), writes: Number(values.writes) }], { timeoutMs: 30 * 60_000 })
} finally {
  await session.close()
  await server.close()
}

const f = (x: number, d = 1) => x.toFixed(d)
console.table({
  'zero-cache start → ready, first visit (ms)': { value: f(r.bootFirstMs, 0), note: `initial sync of ${r.rows} rows into the tab's SQLite` },
  'zero-cache start → ready, restart (ms)': { value: f(r.bootRestartMs, 0), note: 'replica from IndexedDB, no resync' },
  'Zero client first complete result (ms)': { value: f(r.firstResultMs, 0), note: 'new Zero() → materialized query complete' },
  'write → Zero query p50 (ms)': { value: f(r.writeToQuery.p50), note: `db.query INSERT issued → row in the live query; ${r.writes} writes one at a time` },
  'write → Zero query p95 (ms)': { value: f(r.writeToQuery.p95), note: '' },
  'anchor: INSERT round trip p50 (ms)': { value: f(r.insertRoundTrip.p50), note: `same run; p95 ${f(r.insertRoundTrip.p95)}; ratio write→query / INSERT ${f(r.writeToQuery.p50 / r.insertRoundTrip.p50, 2)}x` },
  'bundle JS (MB)': { value: f(js / 1e6, 2), note: `${f(jsGz / 1e6, 2)} MB gzipped; sqlite3.wasm ${f(wasmGz / 1e6, 2)} MB gzipped` },
})
mkdirSync(join(root, 'bench/results'), { recursive: true })
writeFileSync(join(root, 'bench/results/zero-tab.json'), JSON.stringify({ date: new Date().toISOString(), ...r, bundle: { jsBytes: js, jsGzipBytes: jsGz, wasmGzipBytes: wasmGz } }, null, 2))
