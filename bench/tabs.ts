// npm run bench:tabs [-- --rounds 10 --queries 200 --takeovers 10]
// Every tab uses the database (src/client/leadership.ts), in Chromium (the
// page: bench/tabs/): a follower tab's query round trip next to the leader
// tab's, measured in alternating rounds in one run (target: follower p50 <=
// 2 x leader p50 + 0.2 ms), and takeover time when the leading tab closes or
// its worker is killed (target: p50 <= 1.5 s): to the follower's link to the
// new leader, and to the answer of a query sent the moment the leader went.
// Prints a table and writes bench/results/tabs.json.

import { mkdirSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { BrowserContext, Page } from 'playwright'
import { serveBuiltSite } from '../test/support/built-site'

const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '10' }, queries: { type: 'string', default: '200' }, takeovers: { type: 'string', default: '10' } },
})
const ROUNDS = Number(values.rounds)
const QUERIES = Number(values.queries)
const TAKEOVERS = Number(values.takeovers)
const WAIT_MS = 120_000

type BenchApi = { leads(): boolean; roundTrips(n: number): Promise<number[]>; takeovers(): { linkedMs: number; answeredMs: number }[]; kill(): void }
declare const bench: BenchApi

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

const site = await serveBuiltSite({
  root: fileURLToPath(new URL('./tabs/', import.meta.url)),
  configFile: false,
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
  worker: { format: 'es' },
  build: { target: 'es2022', rollupOptions: { onwarn: () => {} } },
  // Cross-origin isolated: performance.now() resolves 5 µs, not 100 µs.
  preview: { headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } },
})

async function open(context: BrowserContext): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error('  [page error]', e))
  await page.goto(site.url)
  await page.waitForFunction(() => 'bench' in window, null, { timeout: WAIT_MS })
  return page
}

try {
  const context = await site.browser.newContext()
  let leader = await open(context)
  let follower = await open(context)
  if (!(await leader.evaluate(() => bench.leads())) || (await follower.evaluate(() => bench.leads()))) throw new Error('the first tab should lead')

  // Round trips: alternating rounds, so both see the same machine.
  await leader.evaluate((n) => bench.roundTrips(n), 50) // warm-up
  await follower.evaluate((n) => bench.roundTrips(n), 50)
  const lead: number[] = []
  const follow: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    lead.push(...(await leader.evaluate((n) => bench.roundTrips(n), QUERIES)))
    follow.push(...(await follower.evaluate((n) => bench.roundTrips(n), QUERIES)))
  }

  // Takeovers: the leading tab closes, or its worker is killed; the follower takes over and a new tab follows it.
  const times: { kind: string; linkedMs: number; answeredMs: number }[] = []
  for (let i = 0; i < TAKEOVERS; i++) {
    const kind = i % 2 === 0 ? 'tab closed' : 'worker killed'
    const before = (await follower.evaluate(() => bench.takeovers())).length
    if (kind === 'tab closed') await leader.close()
    else await leader.evaluate(() => bench.kill())
    await follower.waitForFunction((n) => bench.takeovers().length > n, before, { timeout: WAIT_MS, polling: 10 })
    times.push({ kind, ...(await follower.evaluate(() => bench.takeovers())).at(-1)! })
    // The tab that lost its worker now follows; a closed one is replaced by a new tab.
    const next = kind === 'tab closed' ? await open(context) : leader
    leader = follower
    follower = next
    await follower.waitForFunction(() => !bench.leads(), null, { timeout: WAIT_MS })
    await follower.evaluate(() => bench.roundTrips(1)) // linked to the new leader
  }
  await context.close()

  const r = {
    date: new Date().toISOString(),
    roundTrip: {
      queries: lead.length,
      leaderP50Ms: quantile(lead, 0.5),
      leaderP95Ms: quantile(lead, 0.95),
      followerP50Ms: quantile(follow, 0.5),
      followerP95Ms: quantile(follow, 0.95),
      targetMs: 2 * quantile(lead, 0.5) + 0.2,
    },
    takeover: {
      count: times.length,
      linkedP50Ms: quantile(times.map((t) => t.linkedMs), 0.5),
      linkedMaxMs: Math.max(...times.map((t) => t.linkedMs)),
      answeredP50Ms: quantile(times.map((t) => t.answeredMs), 0.5),
      answeredMaxMs: Math.max(...times.map((t) => t.answeredMs)),
      each: times,
    },
  }
  const f = (ms: number) => `${ms.toFixed(3)} ms`
  console.table({
    'leader query round trip p50 / p95': `${f(r.roundTrip.leaderP50Ms)} / ${f(r.roundTrip.leaderP95Ms)}`,
    'follower query round trip p50 / p95': `${f(r.roundTrip.followerP50Ms)} / ${f(r.roundTrip.followerP95Ms)}`,
    'follower target (2 x leader p50 + 0.2 ms)': `${f(r.roundTrip.targetMs)} (${r.roundTrip.followerP50Ms <= r.roundTrip.targetMs ? 'met' : 'missed'})`,
    'takeover: lost -> linked p50 / max': `${r.takeover.linkedP50Ms.toFixed(0)} / ${r.takeover.linkedMaxMs.toFixed(0)} ms`,
    'takeover: lost -> query answered p50 / max': `${r.takeover.answeredP50Ms.toFixed(0)} / ${r.takeover.answeredMaxMs.toFixed(0)} ms (target p50 <= 1500)`,
  })
  mkdirSync(fileURLToPath(new URL('./results/', import.meta.url)), { recursive: true })
  writeFileSync(fileURLToPath(new URL('./results/tabs.json', import.meta.url)), JSON.stringify(r, null, 2))
} finally {
  await site.close()
}
