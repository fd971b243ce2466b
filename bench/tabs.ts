// npm run bench:tabs [-- --rounds 10 --queries 200 --takeovers 10 --engine chromium|firefox|webkit|all --verbose]
// Every tab uses the database (src/client/leadership.ts), in each engine (the
// page: bench/tabs/; --engine as in bench:browser, default every engine
// installed): a follower tab's query round trip next to the leader tab's,
// measured in alternating rounds in one run (target: follower p50 <= 2 x
// leader p50 + 0.2 ms), and takeover time when the leading tab closes or its
// worker is killed (target: p50 <= 1.5 s): to the follower's link to the new
// leader, and to the answer of a query sent the moment the leader went.
// Beside them, bare PGlite in a worker of the same page, same engine, same
// run: its query round trip (in memory, over postMessage) and its reopen of
// an idb:// database (what a new leader's worker does too), interleaved with
// the takeovers. Prints a table, one column per engine, and writes
// bench/results/tabs.json.

import { mkdirSync, writeFileSync } from 'node:fs'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { benchEngines, benchSession, errorText, isNa, na, type EngineName, type NotAvailable } from './browsers'
import { waitForFunction, type Session, type Tab } from '../test/support/browsers/index.ts'
import { serveBuiltSite } from '../test/support/built-site'
import { crossOriginIsolation } from '../scripts/vite-cross-origin-isolation'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '10' },
    queries: { type: 'string', default: '200' },
    takeovers: { type: 'string', default: '10' },
    engine: { type: 'string', default: 'all' },
    /** Each takeover as it happens. */
    verbose: { type: 'boolean', default: false },
  },
})
const engines = benchEngines(['--engine', values.engine!])
const ROUNDS = Number(values.rounds)
const QUERIES = Number(values.queries)
const TAKEOVERS = Number(values.takeovers)
const verbose = values.verbose!
const WAIT_MS = 120_000

type BenchApi = {
  leads(): boolean
  roundTrips(n: number): Promise<number[]>
  bareRoundTrips(n: number): Promise<number[]>
  bareOpen(): Promise<number>
  takeovers(): { linkedMs: number; answeredMs: number }[]
  kill(): void
}
declare const bench: BenchApi

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

interface TabsResult {
  roundTrip: { queries: number; leaderP50Ms: number; leaderP95Ms: number; followerP50Ms: number; followerP95Ms: number; targetMs: number; bareP50Ms: number; bareP95Ms: number }
  takeover: {
    planned: number
    count: number
    linkedP50Ms: number
    linkedMaxMs: number
    answeredP50Ms: number
    answeredMaxMs: number
    each: { kind: string; linkedMs: number; answeredMs: number }[]
    /** Why the takeovers stopped before `planned` (those before it are measured). */
    failed?: string
  }
  /** Bare PGlite idb:// reopen, spawn → first answer, once per takeover (after it). */
  bareReopen: { count: number; p50Ms: number; maxMs: number; createMs: number; each: number[] }
  ratios: { followerVsLeaderP50: number; leaderVsBareP50: number; takeoverAnsweredVsBareReopenP50: number }
  /** What the pages recorded (uncaught errors, console errors), for the record. */
  pageErrors: string[]
}

const site = await serveBuiltSite({
  root: fileURLToPath(new URL('./tabs/', import.meta.url)),
  configFile: false,
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
  worker: { format: 'es' },
  build: { target: 'es2022', rollupOptions: { onwarn: () => {} } },
  // Cross-origin isolated on every response, 304s included: performance.now() resolves finer.
  plugins: [crossOriginIsolation()],
})

/** What a tab got to, and the origin's Web Locks as it sees them, for a tab that never got ready. */
async function diagnose(tab: Tab): Promise<string> {
  const got = await tab
    .evaluate(
      async () => ({
        trace: (window as unknown as { benchTrace?: string[] }).benchTrace ?? ['(the page script did not start)'],
        locks: await navigator.locks.query(),
      }),
      null,
    )
    .catch((err) => ({ trace: [String(err)], locks: null }))
  return `trace: ${got.trace.join(' | ')}; locks: ${JSON.stringify(got.locks)}`
}

async function measure(session: Session): Promise<TabsResult> {
  const pageErrors: string[] = []
  const errorsOf = async (tab: Tab, name: string) => {
    const got = await tab.evaluate(() => (window as unknown as { __pageErrors?: string[] }).__pageErrors?.splice(0) ?? [], null).catch(() => [] as string[])
    for (const e of got) {
      console.error(`  [page error, ${name}] ${e}`)
      pageErrors.push(e)
    }
  }
  const open = async (): Promise<Tab> => {
    const tab = await session.newTab()
    await tab.goto(site.url)
    try {
      await waitForFunction(tab, () => 'bench' in window, null, { timeout: WAIT_MS, interval: 20, what: 'the tabs page' })
    } catch (e) {
      await errorsOf(tab, 'new tab')
      throw new Error(`${errorText(e)}; the new tab: ${await diagnose(tab)}`)
    }
    return tab
  }
  let leader = await open()
  let follower = await open()
  if (!(await leader.evaluate(() => bench.leads(), null)) || (await follower.evaluate(() => bench.leads(), null))) throw new Error('the first tab should lead')

  // Round trips: alternating rounds, so all three see the same machine.
  await leader.evaluate((n) => bench.roundTrips(n), 50) // warm-up
  await follower.evaluate((n) => bench.roundTrips(n), 50)
  await leader.evaluate((n) => bench.bareRoundTrips(n), 50)
  const lead: number[] = []
  const follow: number[] = []
  const bare: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    lead.push(...(await leader.evaluate((n) => bench.roundTrips(n), QUERIES)))
    follow.push(...(await follower.evaluate((n) => bench.roundTrips(n), QUERIES)))
    bare.push(...(await leader.evaluate((n) => bench.bareRoundTrips(n), QUERIES)))
  }
  // The bare idb:// database, created once (initdb) so that each later open is a reopen.
  const createMs = await leader.evaluate(() => bench.bareOpen(), null)

  // Takeovers: the leading tab closes, or its worker is killed; the follower takes over and a new tab follows it.
  const times: { kind: string; linkedMs: number; answeredMs: number }[] = []
  const reopens: number[] = []
  let takeoverFailure: string | undefined
  try {
    for (let i = 0; i < TAKEOVERS; i++) {
      const kind = i % 2 === 0 ? 'tab closed' : 'worker killed'
      const before = (await follower.evaluate(() => bench.takeovers(), null)).length
      if (kind === 'tab closed') await leader.close()
      else await leader.evaluate(() => bench.kill(), null)
      await waitForFunction(follower, (n) => bench.takeovers().length > n, before, { timeout: WAIT_MS, interval: 10, what: `takeover ${i + 1} (${kind})` })
      times.push({ kind, ...(await follower.evaluate(() => bench.takeovers(), null)).at(-1)! })
      if (verbose) console.log(`  takeover ${i + 1} (${kind}): ${JSON.stringify(times.at(-1))}`)
      // The tab that lost its worker now follows; a closed one is replaced by a new tab.
      const next = kind === 'tab closed' ? await open() : leader
      leader = follower
      follower = next
      await waitForFunction(follower, () => !bench.leads(), null, { timeout: WAIT_MS, what: 'the new tab to follow' })
      await follower.evaluate((n) => bench.roundTrips(n), 1) // linked to the new leader
      // The anchor, in the same engine between takeovers: bare PGlite reopening its idb:// database.
      reopens.push(await leader.evaluate(() => bench.bareOpen(), null))
      await errorsOf(leader, 'leader')
      await errorsOf(follower, 'follower')
    }
  } catch (e) {
    // What was measured stands; the run says where it stopped and why.
    if (times.length === 0 || reopens.length === 0) throw e
    takeoverFailure = `after ${times.length} of ${TAKEOVERS} takeovers: ${errorText(e)}`
    console.error(`  takeovers stopped after ${times.length} of ${TAKEOVERS}: ${e instanceof Error ? e.message : String(e)}`)
  }
  const answeredP50Ms = quantile(
    times.map((t) => t.answeredMs),
    0.5,
  )
  return {
    roundTrip: {
      queries: lead.length,
      leaderP50Ms: quantile(lead, 0.5),
      leaderP95Ms: quantile(lead, 0.95),
      followerP50Ms: quantile(follow, 0.5),
      followerP95Ms: quantile(follow, 0.95),
      targetMs: 2 * quantile(lead, 0.5) + 0.2,
      bareP50Ms: quantile(bare, 0.5),
      bareP95Ms: quantile(bare, 0.95),
    },
    takeover: {
      planned: TAKEOVERS,
      count: times.length,
      linkedP50Ms: quantile(
        times.map((t) => t.linkedMs),
        0.5,
      ),
      linkedMaxMs: Math.max(...times.map((t) => t.linkedMs)),
      answeredP50Ms,
      answeredMaxMs: Math.max(...times.map((t) => t.answeredMs)),
      each: times,
      ...(takeoverFailure ? { failed: takeoverFailure } : {}),
    },
    bareReopen: { count: reopens.length, p50Ms: quantile(reopens, 0.5), maxMs: Math.max(...reopens), createMs, each: reopens },
    ratios: {
      followerVsLeaderP50: quantile(follow, 0.5) / quantile(lead, 0.5),
      leaderVsBareP50: quantile(lead, 0.5) / quantile(bare, 0.5),
      takeoverAnsweredVsBareReopenP50: answeredP50Ms / quantile(reopens, 0.5),
    },
    pageErrors,
  }
}

const start = loadavg()
const results: Partial<Record<EngineName, TabsResult | NotAvailable>> = {}
let failed = false
try {
  for (const engine of engines) {
    console.log(`bench:tabs: ${engine}`)
    const session = await benchSession(engine)
    try {
      const r = await measure(session)
      results[engine] = r
      if (r.takeover.failed) failed = true
    } catch (e) {
      console.error(`bench:tabs: ${engine}: failed:`, e)
      failed = true
      results[engine] = na(`failed: ${errorText(e)}`)
    } finally {
      await session.close()
    }
  }

  const f = (ms: number) => `${ms.toFixed(3)} ms`
  const cell = (fn: (r: TabsResult) => string) => Object.fromEntries(engines.map((e) => [e, isNa(results[e]) ? 'n/a' : fn(results[e] as TabsResult)]))
  console.table({
    'leader query round trip p50 / p95': cell((r) => `${f(r.roundTrip.leaderP50Ms)} / ${f(r.roundTrip.leaderP95Ms)}`),
    'follower query round trip p50 / p95': cell((r) => `${f(r.roundTrip.followerP50Ms)} / ${f(r.roundTrip.followerP95Ms)}`),
    'follower vs leader p50 (x)': cell((r) => r.ratios.followerVsLeaderP50.toFixed(2)),
    'follower target (2 x leader p50 + 0.2 ms)': cell((r) => `${f(r.roundTrip.targetMs)} (${r.roundTrip.followerP50Ms <= r.roundTrip.targetMs ? 'met' : 'missed'})`),
    'bare PGlite query round trip p50 / p95': cell((r) => `${f(r.roundTrip.bareP50Ms)} / ${f(r.roundTrip.bareP95Ms)}`),
    'leader vs bare PGlite p50 (x)': cell((r) => r.ratios.leaderVsBareP50.toFixed(2)),
    'takeovers measured': cell((r) => `${r.takeover.count} of ${r.takeover.planned}${r.takeover.failed ? ' (then failed)' : ''}`),
    'takeover: lost -> linked p50 / max': cell((r) => `${r.takeover.linkedP50Ms.toFixed(0)} / ${r.takeover.linkedMaxMs.toFixed(0)} ms`),
    'takeover: lost -> query answered p50 / max': cell((r) => `${r.takeover.answeredP50Ms.toFixed(0)} / ${r.takeover.answeredMaxMs.toFixed(0)} ms (target p50 <= 1500)`),
    'bare PGlite idb:// reopen p50 / max': cell((r) => `${r.bareReopen.p50Ms.toFixed(0)} / ${r.bareReopen.maxMs.toFixed(0)} ms`),
    'takeover answered vs bare reopen p50 (x)': cell((r) => r.ratios.takeoverAnsweredVsBareReopenP50.toFixed(2)),
  })
  for (const e of engines) {
    const r = results[e]
    if (isNa(r)) console.log(`${e}: n/a: ${r.na}`)
    else if (r) {
      if (r.takeover.failed) console.log(`${e}: takeovers stopped ${r.takeover.failed}`)
      if (r.pageErrors.length) console.log(`${e}: the pages recorded ${r.pageErrors.length} errors (in tabs.json)`)
    }
  }
  mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true })
  const json = {
    date: new Date().toISOString(),
    options: { rounds: ROUNDS, queries: QUERIES, takeovers: TAKEOVERS },
    machine: { cpus: cpus().length, loadAverageAtStart: start, loadAverageAtEnd: loadavg() },
    engines: results,
  }
  writeFileSync(fileURLToPath(new URL('./results/tabs.json', import.meta.url)), JSON.stringify(json, null, 2))
  console.log('wrote bench/results/tabs.json')
} catch (e) {
  failed = true
  console.error(e)
} finally {
  await site.close()
}
process.exit(failed ? 1 : 0)
