// The browser benchmark, run in a page by bench/browser.ts (in each engine,
// Vite dev server). Everything runs in one page in one run, so both sides of
// each ratio see the same (noisy, shared) machine.
//
// Timing: the page is served cross-origin isolated (bench/browser.ts sets
// COOP/COEP), so performance.now() has 5 µs resolution instead of 100 µs.
// The worker round trip is still timed in batches of sequential round trips
// (mean per batch). Commit-to-frame is timed across realms: the worker stamps
// when a flush made a commit durable, the page when its Commit frame arrived,
// both as performance.timeOrigin + performance.now(). Each realm's timeOrigin
// comes from the wall clock when it started, so realms can disagree (a run
// here saw a worker 1.6 s off after the machine's clock stepped): each
// worker's offset is measured by ping (clockOffset) and subtracted.

import { openDatabase, type Database, type ReplicationStream } from '../../src/client'
import { parseLsn, type Lsn } from '../../src/protocol/lsn'
import type { PgliteInsertRequest, PgliteInsertResult } from './pglite-worker'

export interface BenchOptions {
  quick: boolean
}

/**
 * Time budgets (ms): a write path that flushes once per statement (hundreds
 * of ms each on IndexedDB) must not turn the run into an hour. A measurement
 * that runs out of budget stops issuing work and reports what it completed.
 */
const budget = (quick: boolean) => ({ latencyMs: quick ? 30_000 : 120_000, insertsMs: quick ? 20_000 : 60_000 })

export interface Percentiles {
  samples: number
  p50: number
  p95: number
}

export interface BenchResults {
  userAgent: string
  crossOriginIsolated: boolean
  /** The smallest step performance.now() takes here (engines coarsen it differently, isolated or not). */
  timerResolutionMs: number
  roundTrip: Percentiles & {
    batch: number
    /** The echo worker's clock offset from the page's (see clockOffset), for the record. */
    clock: ClockOffset
    /**
     * Single round trips each after the page idled 12 ms, as it does between
     * commits while a flush runs: includes waking a sleeping page thread,
     * which a commit's frame also pays (context for commit-to-frame; the
     * target is against the plain round trip).
     */
    afterIdle: Percentiles
    /**
     * One way, worker → page over a MessagePort (a stream's transport), each
     * message sent after the page idled 12 ms: send (worker's stamp) → received.
     */
    portOneWayAfterIdle: Percentiles
  }
  /** Commit made durable (the flush completed in the worker) → its Commit frame received by the page. */
  commitToFrame: Percentiles & {
    /** The database worker's clock offset, measured before and after the commits. */
    clock: { before: ClockOffset; after: ClockOffset }
    /** Commits asked for; fewer samples mean the time budget ran out. */
    planned: number
    /** db.query() issued → that transaction's Commit frame received (includes running the INSERT and the flush). */
    writeToFrame: Percentiles
    /** db.query() issued → resolved (durable). */
    queryP50: number
    queryP95: number
    /** Commit frame received minus db.query() resolved (negative: the frame came first). */
    frameAfterQueryP50: number
  }
  stream: {
    rows: number
    runs: number
    /** Already durable when the stream starts: START_REPLICATION → last Commit frame, median changes/s. */
    catchUpChangesPerSecond: number
    /** Live: the flush made the transaction durable (worker clock) → its Commit frame at the page. */
    afterDurableMs: Percentiles
    /** db.query issued → last Commit frame (includes running the INSERT and the flush). */
    endToEndChangesPerSecond: number
    insertsReceived: number
  }
  groupCommit: {
    /** planned: inserts asked for; inserts: completed within the time budget. */
    tabgres: { planned: number; inserts: number; inFlight: number; ms: number; perSecond: number; flushes: number; recordsPerFlush: number; kibPerFlush: number }
    /** bootMs: PGlite.create on a new idb:// name (initdb) plus CREATE TABLE, for comparison with boot. */
    pglite: { inserts: number; ms: number; perSecond: number; bootMs: number }
  }
}

declare global {
  interface Window {
    runBench(options: BenchOptions): Promise<BenchResults>
    /** Exposed by bench/browser.ts: progress lines on the terminal. */
    benchLog?: (line: string) => void
  }
}

const TABLE = `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2), at timestamptz DEFAULT now())`
const INSERT = 'INSERT INTO items (id, name, qty, price) VALUES ($1, $2, $3, $4)'
const PGOUTPUT = { proto_version: '1', publication_names: 'bench' }

const run = Date.now().toString(36)
const fresh = (what: string) => `bench_${what}_${run}`
const log = (line: string) => (window.benchLog ? window.benchLog(line) : console.log(line))

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const median = (xs: number[]) => percentile(xs, 50)
const summary = (xs: number[]): Percentiles => ({ samples: xs.length, p50: percentile(xs, 50), p95: percentile(xs, 95) })
/** This realm's clock, comparable across realms once their offset is known. */
const sharedNow = () => performance.timeOrigin + performance.now()

export interface ClockOffset {
  /** Worker clock minus page clock (ms). */
  offsetMs: number
  /** The offset is exact within ± this (half the fastest ping's round trip). */
  boundMs: number
}

/**
 * A worker's clock offset, NTP-style: over 30 pings, the one with the shortest
 * round trip, assuming its two legs took equally long.
 */
async function clockOffset(ping: () => Promise<number>): Promise<ClockOffset> {
  let best: ClockOffset = { offsetMs: 0, boundMs: Infinity }
  for (let i = 0; i < 30; i++) {
    const t0 = sharedNow()
    const at = await ping()
    const t1 = sharedNow()
    if ((t1 - t0) / 2 < best.boundMs) best = { offsetMs: at - (t0 + t1) / 2, boundMs: (t1 - t0) / 2 }
  }
  return best
}

/**
 * Consumes a replication stream in the background, noting when each
 * transaction's Begin and Commit arrive. commit(n) resolves with the arrival
 * time of the n-th Commit.
 */
function consume(stream: ReplicationStream) {
  const state = { commits: 0, inserts: 0, lastBeginAt: 0, committed: [] as { endLsn: Lsn; at: number }[] }
  const waiters: { n: number; resolve: (t: number) => void }[] = []
  const done = (async () => {
    for await (const m of stream.messages()) {
      if (m.kind !== 'xlog') continue
      const msg = m.message
      if (msg.tag === 'B') state.lastBeginAt = performance.now()
      else if (msg.tag === 'I') state.inserts++
      else if (msg.tag === 'C') {
        const now = performance.now()
        state.committed.push({ endLsn: msg.endLsn, at: sharedNow() })
        state.commits++
        // Acknowledge now and then: lets the worker prune its change log
        // without a status update per commit in the latency loop.
        if (state.commits % 50 === 0) stream.ack(msg.commitLsn)
        for (let i = waiters.length - 1; i >= 0; i--) if (state.commits >= waiters[i].n) waiters.splice(i, 1)[0].resolve(now)
      }
    }
  })()
  return {
    state,
    done,
    commit: (n: number) =>
      new Promise<number>((resolve) => (state.commits >= n ? resolve(performance.now()) : waiters.push({ n, resolve }))),
  }
}

/** The smallest non-zero step of performance.now() over a few hundred steps. */
function timerResolution(): number {
  let best = Infinity
  for (let i = 0; i < 200; i++) {
    const t0 = performance.now()
    let t1 = t0
    while (t1 === t0) t1 = performance.now()
    best = Math.min(best, t1 - t0)
  }
  return best
}

/** Sequential postMessage round trips to an echo worker, timed per batch, and the same after idle gaps. */
async function roundTrip(batches: number, batch: number): Promise<BenchResults['roundTrip']> {
  const worker = new Worker(new URL('./echo-worker.ts', import.meta.url), { type: 'module' })
  let resolve: ((data: unknown) => void) | null = null
  worker.onmessage = (ev) => resolve?.(ev.data)
  const once = (message: unknown) =>
    new Promise<unknown>((r) => {
      resolve = r
      worker.postMessage(message)
    })
  for (let i = 0; i < 200; i++) await once(i) // warm up: worker started, code paths compiled
  const perTrip: number[] = []
  for (let b = 0; b < batches; b++) {
    const t0 = performance.now()
    for (let i = 0; i < batch; i++) await once(i)
    perTrip.push((performance.now() - t0) / batch)
  }
  const clock = await clockOffset(() => once('clock') as Promise<number>)
  const afterIdle: number[] = []
  for (let i = 0; i < 50; i++) {
    await new Promise((r) => setTimeout(r, 12))
    const t0 = performance.now()
    await once(i)
    afterIdle.push(performance.now() - t0)
  }
  worker.terminate()
  return {
    ...summary(perTrip),
    batch,
    clock,
    afterIdle: summary(afterIdle),
    portOneWayAfterIdle: await portOneWay(100),
  }
}

/** Worker → page messages over a MessagePort, each after an idle gap; see port-worker.ts. */
function portOneWay(count: number): Promise<Percentiles> {
  const worker = new Worker(new URL('./port-worker.ts', import.meta.url), { type: 'module' })
  const times: number[] = []
  let answer: ((at: number) => void) | null = null
  return new Promise((resolve) => {
    worker.onmessage = async (ev: MessageEvent<{ port: MessagePort } | number>) => {
      if (typeof ev.data === 'number') return answer?.(ev.data)
      const port = ev.data.port
      const { offsetMs } = await clockOffset(() => new Promise<number>((r) => ((answer = r), worker.postMessage('clock'))))
      port.onmessage = (m: MessageEvent<ArrayBuffer>) => {
        times.push(sharedNow() - (new Float64Array(m.data)[0] - offsetMs))
        if (times.length < count) return
        worker.terminate()
        resolve(summary(times))
      }
      worker.postMessage({ count })
    }
    worker.postMessage('port')
  })
}

/** A database with a table, a publication, a slot and a stream being consumed. */
async function streamingDatabase(what: string) {
  const db = await openDatabase(fresh(what))
  await db.exec(`${TABLE}; CREATE PUBLICATION bench FOR ALL TABLES`)
  await db.createSlot('bench')
  const stream = await db.startReplication({ slot: 'bench', options: PGOUTPUT })
  return { db, stream, consumer: consume(stream) }
}

/**
 * Single-row autocommit inserts, one at a time. For each: when the flush made
 * it durable (the worker's stamp) → its Commit frame at the page; and, from
 * the page alone, db.query issued → resolved → Commit frame.
 */
async function commitToFrame(commits: number, budgetMs: number): Promise<BenchResults['commitToFrame']> {
  const { db, stream, consumer } = await streamingDatabase('latency')
  const before = await clockOffset(async () => (await db.stats()).clock)
  const base = consumer.state.commits
  const total: number[] = []
  const query: number[] = []
  const after: number[] = []
  const frames: { endLsn: Lsn; at: number }[] = []
  const WARM_UP = 3
  const start = performance.now()
  for (let i = 0; i < commits + WARM_UP && performance.now() - start < budgetMs; i++) {
    const t0 = performance.now()
    await db.query(INSERT, [i, `item ${i}`, i, '12.50'])
    const t1 = performance.now()
    const tf = await consumer.commit(base + i + 1)
    if (i < WARM_UP) continue
    total.push(tf - t0)
    query.push(t1 - t0)
    after.push(tf - t1)
    frames.push(consumer.state.committed[base + i])
  }
  // Each commit became durable with the first flush that reached its end LSN.
  const clockAfter = await clockOffset(async () => (await db.stats()).clock)
  const offsetMs = (before.offsetMs + clockAfter.offsetMs) / 2
  const durableAt = (await db.stats()).durableAt.map((d) => ({ lsn: parseLsn(d.lsn)!, at: d.at - offsetMs }))
  const fromDurable = frames.map((f) => {
    const d = durableAt.find((e) => e.lsn >= f.endLsn)
    if (!d) throw new Error(`no flush record covers the commit ending at ${f.endLsn}`)
    return f.at - d.at
  })
  await stream.close()
  await db.close()
  return {
    planned: commits,
    ...summary(fromDurable),
    clock: { before, after: clockAfter },
    writeToFrame: summary(total),
    queryP50: percentile(query, 50),
    queryP95: percentile(query, 95),
    frameAfterQueryP50: percentile(after, 50),
  }
}

/**
 * One INSERT ... SELECT of `rows` rows (one transaction), streamed to the
 * page and decoded, two ways:
 * - live: the stream is running when the INSERT commits. It reads the
 *   transaction while the flush runs and holds its frames until the flush
 *   makes it durable (engine/replication/durable-hold.ts), so the figure is
 *   when the last frame reaches the page after the flush's worker-clock stamp;
 * - catch-up: the transaction is durable before the stream starts, so the
 *   figure is the stream's own rate (START_REPLICATION → last Commit frame):
 *   read, encode, transfer and decode, nothing overlapped with a flush.
 */
async function streamThroughput(rows: number, runs: number): Promise<BenchResults['stream']> {
  const { db, stream, consumer } = await streamingDatabase('stream')
  const clock = await clockOffset(async () => (await db.stats()).clock)
  const fromDurable: number[] = []
  const endToEnd: number[] = []
  const catchUp: number[] = []
  let insertsReceived = 0
  for (let r = 0; r < runs; r++) {
    const base = consumer.state.commits
    const inserts = consumer.state.inserts
    const t0 = performance.now()
    await db.query(`INSERT INTO items (id, name, qty, price) SELECT g, 'bulk ' || g, g, 12.5 FROM generate_series(${r * rows + 1}, ${(r + 1) * rows}) g`)
    const t2 = await consumer.commit(base + 1)
    insertsReceived = consumer.state.inserts - inserts
    if (insertsReceived !== rows) throw new Error(`expected ${rows} Insert messages, got ${insertsReceived}`)
    const frame = consumer.state.committed[base]
    const durable = (await db.stats()).durableAt.map((d) => ({ lsn: parseLsn(d.lsn)!, at: d.at - clock.offsetMs })).find((d) => d.lsn >= frame.endLsn)
    if (!durable) throw new Error(`no flush record covers the commit ending at ${frame.endLsn}`)
    fromDurable.push(frame.at - durable.at)
    endToEnd.push(rows / ((t2 - t0) / 1000))
    log(`stream, live: ${rows} rows, last frame ${(frame.at - durable.at).toFixed(1)} ms after the flush made them durable`)
  }
  await stream.close()
  for (let r = 0; r < runs; r++) {
    const slot = `catch_up_${r}`
    await db.createSlot(slot)
    await db.query(`INSERT INTO items (id, name, qty, price) SELECT g, 'again ' || g, g, 12.5 FROM generate_series(${(runs + r) * rows + 1}, ${(runs + r + 1) * rows}) g`)
    const t0 = performance.now()
    const s = await db.startReplication({ slot, options: PGOUTPUT })
    const c = consume(s)
    await c.commit(1)
    const ms = performance.now() - t0
    if (c.state.inserts !== rows) throw new Error(`catch-up: expected ${rows} Insert messages, got ${c.state.inserts}`)
    catchUp.push(rows / (ms / 1000))
    log(`stream, catch-up: ${rows} rows in ${ms.toFixed(0)} ms (its Begin after ${(c.state.lastBeginAt - t0).toFixed(0)} ms)`)
    await s.close()
    await db.dropSlot(slot)
  }
  await db.close()
  return {
    rows,
    runs,
    catchUpChangesPerSecond: median(catchUp),
    afterDurableMs: summary(fromDurable),
    endToEndChangesPerSecond: median(endToEnd),
    insertsReceived,
  }
}

/** Durable autocommit inserts from `inFlight` concurrent writers: group commit shares flushes. */
async function tabgresInserts(planned: number, inFlight: number, budgetMs: number): Promise<BenchResults['groupCommit']['tabgres']> {
  const db = await openDatabase(fresh('group_commit'))
  await db.exec(TABLE)
  const stats0 = await db.stats()
  let next = 0
  const t0 = performance.now()
  // Each writer issues its next insert when the previous one is durable.
  const writer = async () => {
    while (next < planned && performance.now() - t0 < budgetMs) {
      const i = next++
      await db.query(INSERT, [i, `item ${i}`, i, '12.50'])
    }
  }
  await Promise.all(Array.from({ length: inFlight }, writer))
  const ms = performance.now() - t0
  const inserts = next
  const stats = await db.stats()
  const flushes = stats.flushes - stats0.flushes
  // What the flushes wrote to IndexedDB, per flush.
  const written = stats.storage.flushes - stats0.storage.flushes || 1
  const recordsPerFlush = (stats.storage.records - stats0.storage.records) / written
  const kibPerFlush = (stats.storage.bytes - stats0.storage.bytes) / written / 1024
  const n = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM items')).rows[0].n
  if (n !== inserts) throw new Error(`expected ${inserts} rows, found ${n}`)
  await db.close()
  return { planned, inserts, inFlight, ms, perSecond: inserts / (ms / 1000), flushes, recordsPerFlush, kibPerFlush }
}

/** The same inserts through a bare PGlite on idb:// in its own worker. */
function pgliteInserts(inserts: number): Promise<BenchResults['groupCommit']['pglite']> {
  const worker = new Worker(new URL('./pglite-worker.ts', import.meta.url), { type: 'module' })
  return new Promise((resolve, reject) => {
    worker.onerror = (e) => reject(new Error(`pglite worker: ${e.message}`))
    worker.onmessage = (ev: MessageEvent<PgliteInsertResult>) => {
      worker.terminate()
      const { ms, bootMs } = ev.data
      resolve({ inserts, ms, perSecond: inserts / (ms / 1000), bootMs })
    }
    const req: PgliteInsertRequest = { name: fresh('pglite'), inserts }
    worker.postMessage(req)
  })
}

window.runBench = async ({ quick }: BenchOptions): Promise<BenchResults> => {
  const limits = budget(quick)
  const trip = await roundTrip(quick ? 50 : 200, 20)
  log(`round trip: p50 ${(trip.p50 * 1000).toFixed(0)} µs; echo worker clock offset ${trip.clock.offsetMs.toFixed(3)} ± ${trip.clock.boundMs.toFixed(3)} ms`)
  const latency = await commitToFrame(quick ? 50 : 200, limits.latencyMs)
  log(`commit-to-frame: ${latency.samples} commits, p50 ${latency.p50.toFixed(3)} ms, p95 ${latency.p95.toFixed(3)} ms from durable; write-to-frame p50 ${latency.writeToFrame.p50.toFixed(2)} ms`)

  const streamed = await streamThroughput(10_000, quick ? 1 : 3)

  const tabgres = await tabgresInserts(quick ? 500 : 2000, 64, limits.insertsMs)
  log(`group commit: ${tabgres.inserts} inserts, ${tabgres.perSecond.toFixed(0)}/s, ${tabgres.flushes} flushes, ${tabgres.recordsPerFlush.toFixed(1)} files and ${tabgres.kibPerFlush.toFixed(0)} KiB written per flush`)
  const pglite = await pgliteInserts(quick ? 20 : 50)
  log(`bare PGlite idb: ${pglite.perSecond.toFixed(1)} inserts/s`)

  return {
    userAgent: navigator.userAgent,
    crossOriginIsolated: self.crossOriginIsolated,
    timerResolutionMs: timerResolution(),
    roundTrip: trip,
    commitToFrame: latency,
    stream: streamed,
    groupCommit: { tabgres, pglite },
  }
}
