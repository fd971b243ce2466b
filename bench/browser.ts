// Browser benchmark: starts a Vite dev server and a headless Chromium (a
// fresh profile: IndexedDB empty), runs bench/browser/bench.ts in a page,
// prints a table and writes bench/results/browser.json.
//
//   npm run bench:browser [-- --quick] [-- --boot-only]
//
// Chromium: /usr/bin/chromium, or CHROMIUM_PATH. Playwright only drives it
// (it cannot download its own browsers here).

import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import type { Browser } from 'playwright'
import { createServer, type ViteDevServer } from 'vite'
import type { BenchResults } from './browser/bench'
import { bootSection, type BootSummary } from './browser/boot-section'
import { launchChromium } from '../test/support/built-site'
import { chromiumPath } from '../test/support/chromium'
import { freePort } from '../test/support/free-port'
import { templateAsset } from '../scripts/vite-template'

const quick = process.argv.includes('--quick')
/** Only the boot section, its summary printed (for work on boot). */
const bootOnly = process.argv.includes('--boot-only')
const root = fileURLToPath(new URL('..', import.meta.url))
/** The whole page run; a hung run fails instead of waiting forever. */
const TIMEOUT_MS = (quick ? 10 : 20) * 60_000

async function startVite(): Promise<ViteDevServer> {
  const server = await createServer({
    configFile: false, // vite.config.ts is Vitest's; only its dev-server settings matter here
    root,
    logLevel: 'warn',
    clearScreen: false,
    // Its own pre-bundle cache: a concurrent `npm test` keeps its own.
    cacheDir: 'node_modules/.vite-bench-browser',
    // PGlite is imported only inside workers (see vite.config.ts); Comlink is shared.
    optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'], entries: ['bench/browser/index.html'] },
    worker: { format: 'es' },
    plugins: [templateAsset()],
    // No HMR and no file watching: an edit elsewhere in the tree must not reload the page mid-run.
    // Cross-origin isolated (COOP/COEP): performance.now() resolves 5 µs, not 100 µs.
    server: {
      host: '127.0.0.1',
      port: await freePort(),
      strictPort: true,
      hmr: false,
      watch: null,
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    },
  })
  await server.listen()
  return server
}

async function runInBrowser(url: string): Promise<BenchResults> {
  let browser: Browser | null = null
  try {
    browser = await launchChromium()
    const page = await browser.newPage()
    await page.exposeFunction('benchLog', (line: string) => console.log(`  ${line}`))
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') console.error(`  [page ${m.type()}] ${m.text()}`)
    })
    page.on('pageerror', (e) => console.error(`  [page error] ${e.message}`))
    await page.goto(url)
    await page.waitForFunction(() => typeof window.runBench === 'function')
    let timer: NodeJS.Timeout | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the page did not finish within ${TIMEOUT_MS / 60_000} min`)), TIMEOUT_MS)
    })
    try {
      return await Promise.race([page.evaluate((opts) => window.runBench(opts), { quick }), timeout])
    } finally {
      clearTimeout(timer)
    }
  } finally {
    await browser?.close()
  }
}

function report(r: BenchResults, boot: BootSummary) {
  const f = (x: number, d = 2) => x.toFixed(d)
  const gc = r.groupCommit
  const insertRatio = gc.tabgres.perSecond / gc.pglite.perSecond
  const latencyRatio = r.commitToFrame.p50 / r.roundTrip.p50
  const results = {
    date: new Date().toISOString(),
    quick,
    boot,
    ...r,
    ratios: { groupCommitVsPglite: insertRatio, commitToFrameP50VsRoundTripP50: latencyRatio },
  }
  const ms = (x: number | null | undefined) => (x == null ? 'n/a' : x.toFixed(0))
  const mib = (x: number | null) => (x === null ? 'n/a' : (x / 2 ** 20).toFixed(0))
  console.table({
    'boot: tabgres first-ever open (ms)': {
      value: ms(boot.tabgres.firstEver),
      note: `fresh profile; ${boot.ratios.firstEverVsBareMemoryFirst.toFixed(2)}x bare PGlite's first in-memory boot (target <= 0.3x and <= 1000 ms); ${boot.tabgres.firstEverPhases}`,
    },
    'boot: tabgres new database, median (ms)': { value: ms(boot.tabgres.fresh), note: `${boot.runs} runs; ${boot.tabgres.freshPhases}` },
    'boot: tabgres reopen, median (ms)': {
      value: ms(boot.tabgres.reopen),
      note: `${boot.ratios.reopenVsBareReopen.toFixed(2)}x bare PGlite's idb:// reopen (target <= 1.0x); ${boot.tabgres.reopenPhases}`,
    },
    'boot: bare PGlite in memory, first (ms)': { value: ms(boot.bare.memoryFirst), note: `fresh profile; then median ${ms(boot.bare.memory)} ms` },
    'boot: bare PGlite new idb:// (ms)': { value: ms(boot.bare.idbNew), note: 'initdb in WASM, then the first sync to IndexedDB' },
    'boot: bare PGlite idb:// reopen, median (ms)': { value: ms(boot.bare.idbReopen), note: '' },
    'testing kit: fresh database p50 (ms)': {
      value: boot.kit.fresh.p50.toFixed(1),
      note: `fresh() until its first answer; p95 ${boot.kit.fresh.p95.toFixed(1)}, over ${boot.kit.fresh.samples}, each then used and closed as a test would (target p50 <= 100); first ${ms(boot.kit.first)} ms`,
    },
    'testing kit: memory before / after 200 more databases (MiB)': {
      value: `${mib(boot.kit.memory.before)} / ${mib(boot.kit.memory.after200)}`,
      note: `page and workers (measureUserAgentSpecificMemory); ${boot.kit.memory.liveAfter} databases open after`,
    },
    'durable inserts/s, tabgres group commit': {
      value: f(gc.tabgres.perSecond, 1),
      note: `${gc.tabgres.inserts} of ${gc.tabgres.planned} inserts in budget, ${gc.tabgres.inFlight} in flight, ${gc.tabgres.flushes} flushes, ${gc.tabgres.kibPerFlush.toFixed(0)} KiB in ${gc.tabgres.recordsPerFlush.toFixed(1)} files each`,
    },
    'durable inserts/s, bare PGlite idb://': { value: f(gc.pglite.perSecond, 1), note: `${gc.pglite.inserts} inserts, each awaited` },
    'group commit vs PGlite (x)': { value: f(insertRatio, 1), note: 'target >= 100' },
    'commit-to-frame p50 (ms)': {
      value: f(r.commitToFrame.p50, 3),
      note: `durable (flush done, worker clock) → Commit frame at the page; ${r.commitToFrame.samples} of ${r.commitToFrame.planned} single-row commits in budget`,
    },
    'commit-to-frame p95 (ms)': { value: f(r.commitToFrame.p95, 3), note: '' },
    'write-to-frame p50 (ms)': { value: f(r.commitToFrame.writeToFrame.p50, 3), note: 'db.query issued → Commit frame (runs the INSERT and the flush)' },
    'write-to-frame p95 (ms)': { value: f(r.commitToFrame.writeToFrame.p95, 3), note: '' },
    'db.query durable p50 (ms)': { value: f(r.commitToFrame.queryP50, 3), note: 'issued → resolved' },
    'Commit frame after db.query resolved p50 (ms)': { value: f(r.commitToFrame.frameAfterQueryP50, 3), note: 'negative: frame first' },
    'worker round trip p50 (ms)': { value: f(r.roundTrip.p50, 4), note: `echo worker, mean of ${r.roundTrip.batch} per sample` },
    'worker round trip p95 (ms)': { value: f(r.roundTrip.p95, 4), note: '' },
    'worker round trip after 12 ms idle p50 (ms)': { value: f(r.roundTrip.afterIdle.p50, 4), note: `p95 ${f(r.roundTrip.afterIdle.p95, 4)}; wakes a sleeping page thread, as a commit's frame does` },
    'worker → idle page over a MessagePort, one way, p50 (ms)': {
      value: f(r.roundTrip.portOneWayAfterIdle.p50, 4),
      note: `p95 ${f(r.roundTrip.portOneWayAfterIdle.p95, 4)}; a stream's transport alone, as a commit's frames travel`,
    },
    'database worker clock offset (ms)': {
      value: f(r.commitToFrame.clock.before.offsetMs, 3),
      note: `± ${f(r.commitToFrame.clock.before.boundMs, 3)}; after the commits ${f(r.commitToFrame.clock.after.offsetMs, 3)} ± ${f(r.commitToFrame.clock.after.boundMs, 3)}; subtracted from its stamps; cross-origin isolated: ${r.crossOriginIsolated}`,
    },
    'commit-to-frame p50 vs round trip (x)': { value: f(latencyRatio, 1), note: 'target <= 5' },
    'stream 10k-row txn, catch-up (changes/s)': {
      value: f(r.stream.catchUpChangesPerSecond, 0),
      note: `already durable: START_REPLICATION → last frame, median of ${r.stream.runs} (target >= 100k)`,
    },
    'stream 10k-row txn, live: durable → last frame p50 (ms)': {
      value: f(r.stream.afterDurableMs.p50, 1),
      note: 'read while the flush runs, held until durable (worker clock)',
    },
    'stream 10k-row txn, from INSERT issued (changes/s)': { value: f(r.stream.endToEndChangesPerSecond, 0), note: '' },
  })
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./results/browser.json', import.meta.url), JSON.stringify(results, null, 2))
  console.log('wrote bench/results/browser.json')
}

let server: ViteDevServer | null = null
let failed = false
try {
  // Boot first, from a production build in fresh browser contexts (./browser/boot-section.ts).
  console.log(`bench:browser${quick ? ' (quick)' : ''}: ${chromiumPath}; boot section`)
  const boot = await bootSection(quick ? 2 : 5)
  if (bootOnly) {
    const { raw: _raw, ...summary } = boot
    console.log(JSON.stringify(summary, null, 2))
  } else {
    server = await startVite()
    const base = server.resolvedUrls?.local[0] ?? `http://127.0.0.1:${server.config.server.port}/`
    console.log(`bench:browser: ${base}`)
    report(await runInBrowser(new URL('bench/browser/index.html', base).href), boot)
  }
} catch (e) {
  failed = true
  console.error(e)
} finally {
  await server?.close()
}
// Exit explicitly: nothing of ours is left running, and a stray handle must not keep the script alive.
process.exit(failed ? 1 : 0)
