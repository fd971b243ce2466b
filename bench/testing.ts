// npm run bench:testing: the Node testing kit (tabgres/testing). A fresh
// database per test, timed as a test sees it (kit.fresh() → resolved), each
// then used and closed as a test would; 50 timed, then 200 more with the
// process's memory before and after; bare PGlite's in-memory boot (initdb,
// as `new PGlite()` does) measured in the same run, for scale.
// Prints a table and writes bench/results/testing.json.

import { mkdirSync, writeFileSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { createTestKit } from '../src/testing/node'

const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]
const mib = (b: number) => b / 2 ** 20
function memory() {
  globalThis.gc?.()
  const m = process.memoryUsage()
  return { rss: mib(m.rss), heapUsed: mib(m.heapUsed), external: mib(m.external), arrayBuffers: mib(m.arrayBuffers) }
}

async function use(db: PGlite) {
  await db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)')
  await db.query(`INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 10) g`)
  await db.close()
}

const bare: number[] = []
for (let i = 0; i < 3; i++) {
  const t0 = performance.now()
  const db = await PGlite.create()
  await db.query('SELECT 1')
  bare.push(performance.now() - t0)
  await db.close()
}

let t0 = performance.now()
const kit = await createTestKit()
const first = await kit.fresh()
const firstMs = performance.now() - t0
await use(first)

const fresh: number[] = []
const unwarmed = await createTestKit({ prewarm: 0 })
const boot: number[] = []
for (let i = 0; i < 50; i++) {
  t0 = performance.now()
  const db = await kit.fresh()
  fresh.push(performance.now() - t0)
  await use(db)
}
// What one database costs to boot, with nothing booted ahead.
for (let i = 0; i < 20; i++) {
  t0 = performance.now()
  const db = await unwarmed.fresh()
  boot.push(performance.now() - t0)
  await use(db)
}
await unwarmed.close()
const before = memory()
for (let i = 0; i < 200; i++) await use(await kit.fresh())
const after = memory()
await kit.close()

const results = {
  date: new Date().toISOString(),
  bareInMemoryBootMs: quantile(bare, 0.5),
  kit: {
    firstMs,
    fresh: { samples: fresh.length, p50: quantile(fresh, 0.5), p95: quantile(fresh, 0.95) },
    bootWithoutPrewarm: { samples: boot.length, p50: quantile(boot, 0.5), p95: quantile(boot, 0.95) },
    memoryMiB: { before, after200: after, gcExposed: typeof globalThis.gc === 'function' },
  },
}
const f = (x: number) => x.toFixed(1)
console.table({
  'bare PGlite in memory, boot median (ms)': { value: f(results.bareInMemoryBootMs), note: 'new PGlite(): initdb, then SELECT 1' },
  'kit: first database (ms)': { value: f(firstMs), note: 'decodes the template, compiles the wasm, boots' },
  'kit: fresh database p50 (ms)': { value: f(results.kit.fresh.p50), note: `p95 ${f(results.kit.fresh.p95)}, over 50, each used and closed (target p50 <= 100)` },
  'kit: one boot, nothing ahead, p50 (ms)': { value: f(results.kit.bootWithoutPrewarm.p50), note: `p95 ${f(results.kit.bootWithoutPrewarm.p95)} (prewarm: 0)` },
  'kit: RSS before / after 200 more (MiB)': { value: `${after.rss.toFixed(0)}`, note: `before ${before.rss.toFixed(0)}; heap ${before.heapUsed.toFixed(0)} → ${after.heapUsed.toFixed(0)}, array buffers ${before.arrayBuffers.toFixed(0)} → ${after.arrayBuffers.toFixed(0)}` },
})
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(new URL('./results/testing.json', import.meta.url), JSON.stringify(results, null, 2))
console.log('wrote bench/results/testing.json')
process.exit(0)
