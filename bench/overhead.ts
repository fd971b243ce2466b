// Capture overhead that holds still: interleaved pairs. Each pair times the
// same workload on a fresh table without capture and with it, each side in
// its own worker thread (bench/overhead/side.ts), the order alternating pair
// by pair; the figure is the median of the pairs' ratios, with their spread.
// Prints a table and writes bench/results/overhead.json.
//
//   npm run bench:overhead [-- --pairs 11]

import { mkdirSync, writeFileSync } from 'node:fs'
import { Worker } from 'node:worker_threads'
import type { Request, Workload } from './overhead/side'

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? Number(process.argv[i + 1]) : fallback
}
const PAIRS = Math.max(9, arg('pairs', 11))
const ROW_INSERTS = 5000
const BULK_ROWS = 10_000

function side(captured: boolean): Promise<{ run: (r: Request) => Promise<number>; close: () => Promise<void> }> {
  const w = new Worker(new URL('./overhead/side-boot.mjs', import.meta.url), {
    workerData: { captured },
  })
  // Replies come in request order: one handler answers the oldest waiter.
  const waiting: { resolve: (v: unknown) => void; reject: (e: unknown) => void }[] = []
  w.on('message', (v) => waiting.shift()?.resolve(v))
  w.on('error', (e) => waiting.splice(0).forEach((p) => p.reject(e)))
  const next = () => new Promise<unknown>((resolve, reject) => waiting.push({ resolve, reject }))
  return next().then(() => ({
    run: (r) => {
      const reply = next() as Promise<number>
      w.postMessage(r)
      return reply
    },
    close: async () => {
      const reply = next()
      w.postMessage('close')
      await reply
      await w.terminate()
    },
  }))
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

const plain = await side(false)
const captured = await side(true)

async function pairs(workload: Workload, count: number) {
  // One unmeasured pair warms both sides (plans, caches, JIT).
  await plain.run({ workload, count })
  await captured.run({ workload, count })
  const list: { plainMs: number; capturedMs: number; ratio: number; capturedFirst: boolean }[] = []
  for (let k = 0; k < PAIRS; k++) {
    const capturedFirst = k % 2 === 1
    let plainMs: number, capturedMs: number
    if (capturedFirst) {
      capturedMs = await captured.run({ workload, count })
      plainMs = await plain.run({ workload, count })
    } else {
      plainMs = await plain.run({ workload, count })
      capturedMs = await captured.run({ workload, count })
    }
    list.push({ plainMs, capturedMs, ratio: capturedMs / plainMs, capturedFirst })
  }
  const ratios = list.map((p) => p.ratio)
  const sorted = [...ratios].sort((a, b) => a - b)
  return {
    count,
    pairs: list,
    ratio: median(ratios),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    // The middle half of the pairs' ratios.
    q1: sorted[Math.floor((sorted.length - 1) / 4)],
    q3: sorted[Math.ceil(((sorted.length - 1) * 3) / 4)],
    plainMs: median(list.map((p) => p.plainMs)),
    capturedMs: median(list.map((p) => p.capturedMs)),
  }
}

const rows = await pairs('rows', ROW_INSERTS)
const bulk = await pairs('bulk', BULK_ROWS)
await plain.close()
await captured.close()

const results = { date: new Date().toISOString(), node: process.version, pairsPerWorkload: PAIRS, rowInserts: rows, bulkInsertSelect: bulk }
const f = (x: number) => x.toFixed(2)
console.table({
  'row inserts in a transaction (x)': { ratio: f(rows.ratio), spread: `${f(rows.min)}-${f(rows.max)}`, 'middle half': `${f(rows.q1)}-${f(rows.q3)}`, target: '<= 1.3' },
  'INSERT ... SELECT of 10k rows (x)': { ratio: f(bulk.ratio), spread: `${f(bulk.min)}-${f(bulk.max)}`, 'middle half': `${f(bulk.q1)}-${f(bulk.q3)}`, target: '<= 1.5' },
})
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(new URL('./results/overhead.json', import.meta.url), JSON.stringify(results, null, 2))
console.log('wrote bench/results/overhead.json')
