// npm run bench:wire [-- --clients 90 --queries 20 --rounds 3]
// Many clients at once over TCP: --clients postgres.js clients (one
// connection each) run --queries queries each, concurrently; every 5th query
// is a transaction (BEGIN, an UPDATE, a SELECT, COMMIT). The same workload
// runs against `npm run serve` (its own process, data in memory) and against
// PostgreSQL 15 in the same run, alternating, --rounds times each; the figures
// are each side's median round. Errors are counted, not tolerated: a run
// with any fails the bench.
// Prints a table and writes bench/results/wire.json.

import { mkdirSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import postgres from 'postgres'
import { startServe } from '../src/node/serve-process'
import { freePort } from '../test/support/free-port'
import { startPg15 } from '../test/support/pg15'

const { values } = parseArgs({
  options: {
    clients: { type: 'string', default: '90' },
    queries: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
})
const CLIENTS = Number(values.clients)
const QUERIES = Number(values.queries)
const ROUNDS = Number(values.rounds)

interface Round {
  totalMs: number
  latencies: number[]
  errors: string[]
}

async function setup(url: string): Promise<void> {
  const sql = postgres(url, { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS accounts; CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL, note text)`)
  await sql.unsafe(`INSERT INTO accounts SELECT i, 1000, 'account ' || i FROM generate_series(1, ${CLIENTS}) i`)
  await sql.end()
}

async function round(url: string): Promise<Round> {
  const clients = Array.from({ length: CLIENTS }, () => postgres(url, { max: 1, onnotice: () => {}, idle_timeout: 0 }))
  // Connected before the clock starts: the bench measures queries, not start-up.
  await Promise.all(clients.map((sql) => sql`SELECT 1`))
  const latencies: number[] = []
  const errors: string[] = []
  const started = performance.now()
  await Promise.all(
    clients.map(async (sql, c) => {
      const id = c + 1
      for (let q = 0; q < QUERIES; q++) {
        const t0 = performance.now()
        try {
          if (q % 5 === 4) {
            await sql.begin(async (tx) => {
              await tx`UPDATE accounts SET balance = balance - 1 WHERE id = ${id}`
              await tx`SELECT balance FROM accounts WHERE id = ${id}`
            })
          } else if (q % 2 === 0) {
            await sql`SELECT id, balance, note FROM accounts WHERE id = ${((id + q) % CLIENTS) + 1}`
          } else {
            await sql`UPDATE accounts SET note = ${`client ${c} query ${q}`} WHERE id = ${id}`
          }
        } catch (e) {
          errors.push(`${(e as { code?: string }).code ?? ''} ${(e as Error).message}`)
        }
        latencies.push(performance.now() - t0)
      }
    }),
  )
  const totalMs = performance.now() - started
  await Promise.all(clients.map((sql) => sql.end()))
  return { totalMs, latencies, errors }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const median = (xs: number[]) => pct(xs, 50)

const serve = startServe({ data: 'memory', databases: ['postgres'] })
await serve.ready
const pg15 = startPg15(await freePort(), ['postgres'])
const rounds: Record<'tabgres' | 'pg15', Round[]> = { tabgres: [], pg15: [] }
try {
  await setup(serve.url('postgres'))
  await setup(pg15.url('postgres'))
  // Warm-up round each (plans, caches), not counted.
  await round(serve.url('postgres'))
  await round(pg15.url('postgres'))
  for (let r = 0; r < ROUNDS; r++) {
    rounds.pg15.push(await round(pg15.url('postgres')))
    rounds.tabgres.push(await round(serve.url('postgres')))
  }
} finally {
  await serve.stop()
  pg15.stop()
}

const summary = (rs: Round[]) => ({
  totalMs: median(rs.map((r) => r.totalMs)),
  p50: median(rs.map((r) => pct(r.latencies, 50))),
  p95: median(rs.map((r) => pct(r.latencies, 95))),
  errors: rs.flatMap((r) => r.errors),
})
const t = summary(rounds.tabgres)
const p = summary(rounds.pg15)
const f = (n: number) => Math.round(n * 10) / 10
const table = [
  { name: `total, ${CLIENTS} clients x ${QUERIES} queries (ms)`, tabgres: f(t.totalMs), pg15: f(p.totalMs), ratio: f(t.totalMs / p.totalMs) },
  { name: 'query latency p50 (ms)', tabgres: f(t.p50), pg15: f(p.p50), ratio: f(t.p50 / p.p50) },
  { name: 'query latency p95 (ms)', tabgres: f(t.p95), pg15: f(p.p95), ratio: f(t.p95 / p.p95) },
  { name: 'errors', tabgres: t.errors.length, pg15: p.errors.length, ratio: NaN },
]
console.table(table)
const ratio = t.totalMs / p.totalMs
const met = ratio <= 2 && t.errors.length === 0
console.log(`total time x${f(ratio)} PostgreSQL 15's, ${t.errors.length} errors (target <= 2x, none): ${met ? 'met' : 'NOT met'}`)
for (const e of [...new Set(t.errors)].slice(0, 5)) console.log(`  tabgres error: ${e}`)
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(
  new URL('./results/wire.json', import.meta.url),
  JSON.stringify({ when: new Date().toISOString(), clients: CLIENTS, queries: QUERIES, rounds: ROUNDS, table, ratio, tabgres: rounds.tabgres.map((r) => ({ totalMs: r.totalMs, errors: r.errors.length })), pg15: rounds.pg15.map((r) => ({ totalMs: r.totalMs, errors: r.errors.length })) }, null, 2),
)
console.log('wrote bench/results/wire.json')
process.exit(t.errors.length ? 1 : 0)
