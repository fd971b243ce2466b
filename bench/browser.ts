// Browser benchmark, in each engine (test/support/browsers): the boot section
// from a production build (./browser/boot-section.ts), then bench/browser/
// bench.ts in a page of a Vite dev server, each in a fresh profile. Every
// ratio is taken within one engine in one run: tabgres against bare PGlite
// (boot, durable inserts) or against the cheapest worker round trip
// (commit-to-frame) in the same browser. Prints a table, one column per
// engine, and writes bench/results/browser.json.
//
//   npm run bench:browser [-- --quick] [-- --boot-only | --skip-boot] [-- --engine chromium|firefox|webkit|all]
//
// --engine: default all, every engine installed here (a missing one is left
// out, loudly). Chromium: /usr/bin/chromium or CHROMIUM_PATH; Firefox and
// WebKit: see test/support/browsers/engines.ts.

import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { createServer, type ViteDevServer } from 'vite'
import type { BenchResults } from './browser/bench'
import { bootSection, serveBootSite, type BootSummary } from './browser/boot-section'
import { benchEngines, benchSession, errorText, isNa, na, runInPage, waitForPage, type EngineName, type NotAvailable } from './browsers'
import type { BuiltSite } from '../test/support/built-site'
import { freePort } from '../test/support/free-port'
import { templateAsset } from '../scripts/vite-template'
import { crossOriginIsolation } from '../scripts/vite-cross-origin-isolation'

const quick = process.argv.includes('--quick')
/** Only the boot section and its rows (for work on boot). */
const bootOnly = process.argv.includes('--boot-only')
/** Everything but the boot section (for work on streaming and group commit). */
const skipBoot = process.argv.includes('--skip-boot')
const engines = benchEngines()
const root = fileURLToPath(new URL('..', import.meta.url))
/** One engine's page run; a hung run fails instead of waiting forever. */
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
    // Cross-origin isolated (COOP/COEP) on every response, 304s included: performance.now() resolves finer.
    plugins: [templateAsset(), crossOriginIsolation()],
    // No HMR and no file watching: an edit elsewhere in the tree must not reload the page mid-run.
    server: { host: '127.0.0.1', port: await freePort(), strictPort: true, hmr: false, watch: null },
  })
  await server.listen()
  return server
}

async function runBench(engine: EngineName, url: string): Promise<BenchResults> {
  const session = await benchSession(engine)
  try {
    const tab = await session.newTab()
    await tab.goto(url)
    await waitForPage(tab, 'runBench')
    return await runInPage<BenchResults>(tab, 'runBench', [{ quick }], { timeoutMs: TIMEOUT_MS })
  } finally {
    await session.close()
  }
}

interface EngineRun {
  boot: BootSummary | NotAvailable
  bench: BenchResults | NotAvailable
}

const f = (x: number, d = 2) => x.toFixed(d)
const ms = (x: number | null | undefined) => (x == null ? 'n/a' : x.toFixed(0))
const mib = (x: number | null) => (x === null ? 'n/a' : (x / 2 ** 20).toFixed(0))

type Cell = (e: EngineRun) => string
const boot =
  (fn: (b: BootSummary) => string): Cell =>
  (e) =>
    isNa(e.boot) ? 'n/a' : fn(e.boot)
const main =
  (fn: (r: BenchResults) => string): Cell =>
  (e) =>
    isNa(e.bench) ? 'n/a' : fn(e.bench)

/** Rows of the table: a label, each engine's cell, a note. */
const ROWS: [string, Cell, string][] = [
  ['boot: tabgres first-ever open (ms)', boot((b) => ms(b.tabgres.firstEver)), 'fresh profile: nothing cached'],
  ['boot: bare PGlite in memory, first (ms)', boot((b) => ms(b.bare.memoryFirst)), 'fresh profile; initdb in WASM'],
  ['boot: first-ever vs bare first (x)', boot((b) => f(b.ratios.firstEverVsBareMemoryFirst)), 'target <= 0.3x and <= 1000 ms'],
  ['boot: tabgres new database, median (ms)', boot((b) => ms(b.tabgres.fresh)), 'from the template'],
  ['boot: bare PGlite in memory, median (ms)', boot((b) => ms(b.bare.memory)), 'after its first'],
  ['boot: bare PGlite new idb:// (ms)', boot((b) => ms(b.bare.idbNew)), 'initdb, then the first sync to IndexedDB'],
  ['boot: tabgres reopen, median (ms)', boot((b) => ms(b.tabgres.reopen)), ''],
  ['boot: bare PGlite idb:// reopen, median (ms)', boot((b) => ms(b.bare.idbReopen)), ''],
  ['boot: reopen vs bare reopen (x)', boot((b) => f(b.ratios.reopenVsBareReopen)), 'target <= 1.0x'],
  ['testing kit: fresh database p50 / p95 (ms)', boot((b) => `${f(b.kit.fresh.p50, 1)} / ${f(b.kit.fresh.p95, 1)}`), 'fresh() until its first answer, each used and closed'],
  ['testing kit: first database (ms)', boot((b) => ms(b.kit.first)), 'kit worker started, template decoded'],
  ['testing kit: memory before / after 200 more (MiB)', boot((b) => `${mib(b.kit.memory.before)} / ${mib(b.kit.memory.after200)}`), 'measureUserAgentSpecificMemory: Chromium only'],
  ['worker round trip p50 / p95 (ms)', main((r) => `${f(r.roundTrip.p50, 4)} / ${f(r.roundTrip.p95, 4)}`), 'echo worker, mean of a batch of 20'],
  ['commit-to-frame p50 / p95 (ms)', main((r) => `${f(r.commitToFrame.p50, 3)} / ${f(r.commitToFrame.p95, 3)}`), 'flush done (worker clock) → Commit frame at the page'],
  ['commit-to-frame p50 vs round trip (x)', main((r) => f(r.commitToFrame.p50 / r.roundTrip.p50, 1)), 'target <= 5'],
  ['commit-to-frame p50 vs MessagePort one way after idle (x)', main((r) => f(r.commitToFrame.p50 / r.roundTrip.portOneWayAfterIdle.p50, 1)), "the transport's own wake-up, same engine"],
  ['write-to-frame p50 / p95 (ms)', main((r) => `${f(r.commitToFrame.writeToFrame.p50, 2)} / ${f(r.commitToFrame.writeToFrame.p95, 2)}`), 'db.query issued → Commit frame'],
  ['db.query durable p50 (ms)', main((r) => f(r.commitToFrame.queryP50, 2)), 'issued → resolved'],
  ['Commit frame after db.query resolved p50 (ms)', main((r) => f(r.commitToFrame.frameAfterQueryP50, 3)), 'negative: frame first'],
  ['worker round trip after 12 ms idle p50 (ms)', main((r) => f(r.roundTrip.afterIdle.p50, 4)), 'wakes a sleeping page thread'],
  ['worker → idle page over a MessagePort p50 (ms)', main((r) => f(r.roundTrip.portOneWayAfterIdle.p50, 4)), "a stream's transport alone"],
  ['stream 10k rows, live: durable → last frame p50 (ms)', main((r) => f(r.stream.afterDurableMs.p50, 1)), 'read while the flush runs'],
  ['stream 10k rows, catch-up (changes/s)', main((r) => f(r.stream.catchUpChangesPerSecond, 0)), 'START_REPLICATION → last frame (target >= 100k)'],
  ['stream 10k rows, from INSERT issued (changes/s)', main((r) => f(r.stream.endToEndChangesPerSecond, 0)), ''],
  ['durable inserts/s, tabgres group commit', main((r) => f(r.groupCommit.tabgres.perSecond, 1)), '64 writers in flight'],
  ['durable inserts/s, bare PGlite idb://', main((r) => f(r.groupCommit.pglite.perSecond, 1)), 'each awaited'],
  ['group commit vs bare PGlite (x)', main((r) => f(r.groupCommit.tabgres.perSecond / r.groupCommit.pglite.perSecond, 1)), 'target >= 100'],
  ['database worker clock offset (ms)', main((r) => `${f(r.commitToFrame.clock.before.offsetMs, 3)} ± ${f(r.commitToFrame.clock.before.boundMs, 3)}`), 'subtracted from its stamps'],
  ['performance.now() step (ms)', main((r) => String(+r.timerResolutionMs.toPrecision(3))), 'the page timer granularity'],
  ['cross-origin isolated', main((r) => String(r.crossOriginIsolated)), ''],
]

function report(runs: Partial<Record<EngineName, EngineRun>>, load: { start: number[]; end: number[] }) {
  const ran = engines.filter((e) => runs[e])
  const table: Record<string, Record<string, string>> = {}
  for (const [label, cell, note] of ROWS) {
    const isBoot = label.startsWith('boot') || label.startsWith('testing kit')
    if ((bootOnly && !isBoot) || (skipBoot && isBoot)) continue
    const row: Record<string, string> = {}
    for (const e of ran) row[e] = cell(runs[e]!)
    table[label] = { ...row, note }
  }
  console.table(table)
  for (const e of ran) {
    const r = runs[e]!
    if (isNa(r.boot)) console.log(`${e}: boot section n/a: ${r.boot.na}`)
    else {
      const b = r.boot
      console.log(`${e}: boot phases (worker clock, medians): first-ever ${b.tabgres.firstEverPhases}; new ${b.tabgres.freshPhases}; reopen ${b.tabgres.reopenPhases}`)
      if (b.kit.memory.na) console.log(`${e}: testing kit memory n/a: ${b.kit.memory.na}`)
    }
    if (isNa(r.bench)) console.log(`${e}: streaming and group-commit sections n/a: ${r.bench.na}`)
    else if (!bootOnly) {
      const gc = r.bench.groupCommit.tabgres
      console.log(
        `${e}: ${r.bench.userAgent}; commit-to-frame ${r.bench.commitToFrame.samples} of ${r.bench.commitToFrame.planned} commits in budget; group commit ${gc.inserts} of ${gc.planned} inserts, ${gc.flushes} flushes, ${gc.kibPerFlush.toFixed(0)} KiB in ${gc.recordsPerFlush.toFixed(1)} files each`,
      )
    }
  }
  const results = {
    date: new Date().toISOString(),
    quick,
    bootOnly,
    machine: { cpus: cpus().length, loadAverageAtStart: load.start, loadAverageAtEnd: load.end },
    engines: Object.fromEntries(
      ran.map((e) => {
        const r = runs[e]!
        const ratios = {
          ...(isNa(r.boot) ? {} : r.boot.ratios),
          ...(isNa(r.bench)
            ? {}
            : {
                groupCommitVsPglite: r.bench.groupCommit.tabgres.perSecond / r.bench.groupCommit.pglite.perSecond,
                commitToFrameP50VsRoundTripP50: r.bench.commitToFrame.p50 / r.bench.roundTrip.p50,
              }),
        }
        return [e, { boot: r.boot, ...(bootOnly ? {} : { bench: r.bench }), ratios }]
      }),
    ),
  }
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
  writeFileSync(new URL('./results/browser.json', import.meta.url), JSON.stringify(results, null, 2))
  console.log('wrote bench/results/browser.json')
}

const runs: Partial<Record<EngineName, EngineRun>> = {}
const load = { start: loadavg(), end: [] as number[] }
let server: ViteDevServer | null = null
let site: BuiltSite | null = null
let failed = false
try {
  // Boot first, from a production build in fresh profiles (./browser/boot-section.ts), then the rest on a dev server.
  console.log(`bench:browser${quick ? ' (quick)' : ''}: ${engines.join(', ')}`)
  site = skipBoot ? null : await serveBootSite()
  for (const engine of engines) {
    if (!site) {
      runs[engine] = { boot: na('not run (--skip-boot)'), bench: na('not run') }
      continue
    }
    console.log(`bench:browser: boot, ${engine}`)
    let b: BootSummary | NotAvailable
    try {
      b = await bootSection(site, engine, quick ? 2 : 5)
    } catch (e) {
      console.error(`bench:browser: boot, ${engine}: failed:`, e)
      failed = true
      b = na(`failed: ${errorText(e)}`)
    }
    runs[engine] = { boot: b, bench: na('not run (--boot-only)') }
  }
  await site?.close()
  site = null
  if (!bootOnly) {
    server = await startVite()
    const base = server.resolvedUrls?.local[0] ?? `http://127.0.0.1:${server.config.server.port}/`
    const url = new URL('bench/browser/index.html', base).href
    for (const engine of engines) {
      console.log(`bench:browser: ${engine}, ${url}`)
      try {
        runs[engine]!.bench = await runBench(engine, url)
      } catch (e) {
        console.error(`bench:browser: ${engine}: failed:`, e)
        failed = true
        runs[engine]!.bench = na(`failed: ${errorText(e)}`)
      }
    }
  }
  load.end = loadavg()
  report(runs, load)
} catch (e) {
  failed = true
  console.error(e)
} finally {
  await site?.close()
  await server?.close()
}
// Exit explicitly: nothing of ours is left running, and a stray handle must not keep the script alive.
process.exit(failed ? 1 : 0)
