// Clients that die without a goodbye, and a server told to stop: `npm run
// serve` in its own process, as a user runs it. Fifty client processes are
// SIGKILLed at points chosen by a seeded PRNG (inside a transaction, in the
// middle of COPY FROM STDIN, streaming from a slot, waiting for the backend
// another session holds, during a long statement); after each, SELECT 1 on a
// session that stayed answers within 1 s (after a killed pg_sleep(2), within
// 1 s of its end: PGlite cannot interrupt a running statement), nothing the dead sessions wrote is
// visible, new connections are accepted and the server's RSS stays bounded.
// SIGTERM and SIGINT end every session (57P01) and the process within 5 s,
// with what was committed on disk and what was not gone after a restart.

import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { afterAll, describe, expect, it } from 'vitest'
import { startServe, type ServeProcess } from '../../src/node/serve-process'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
const DOOMED = join(root, 'test/support/doomed-client.mjs')
const LISTENING = /^tabgres listening on postgresql:\/\/\S+@[\d.]+:(\d+)\//

const dirs: string[] = []
const started: ChildProcess[] = []
afterAll(() => {
  // Whatever a failed test left running, by the PIDs this file started.
  for (const p of started) {
    if (p.exitCode !== null || p.signalCode !== null) continue
    try {
      if (p.spawnargs[0] === 'npm') process.kill(-p.pid!, 'SIGKILL')
      else p.kill('SIGKILL')
    } catch {}
  }
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }))
})

function client(port: number, replication = false): pg.Client {
  return new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    ...(replication ? { replication: 'database' } : {}),
  } as pg.ClientConfig)
}

/** mulberry32: the same fifty deaths on every run. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Lines of a child's stdout as events: `line(text)` resolves when it was printed, rejects if the child exits first. */
function watchLines(child: ChildProcess, what: string) {
  const seen = new Set<string>()
  const waiting = new Map<string, Array<{ resolve: () => void; reject: (e: Error) => void }>>()
  let err = ''
  let gone: Error | null = null
  child.stderr?.on('data', (d: Buffer) => (err += d.toString('utf8')))
  let rest = ''
  child.stdout!.on('data', (d: Buffer) => {
    rest += d.toString('utf8')
    let nl: number
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl)
      rest = rest.slice(nl + 1)
      seen.add(line)
      for (const w of waiting.get(line) ?? []) w.resolve()
      waiting.delete(line)
    }
  })
  child.once('exit', (code, signal) => {
    gone = new Error(`${what} exited (${code ?? signal}) before printing the line; its stderr:\n${err}`)
    for (const ws of waiting.values()) for (const w of ws) w.reject(gone)
    waiting.clear()
  })
  return {
    line(text: string): Promise<void> {
      if (seen.has(text)) return Promise.resolve()
      if (gone) return Promise.reject(gone)
      return new Promise((resolve, reject) => {
        const ws = waiting.get(text) ?? []
        ws.push({ resolve, reject })
        waiting.set(text, ws)
      })
    },
  }
}

function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode as NodeJS.Signals | null })
  }
  return new Promise((r) => child.once('exit', (code, signal) => r({ code, signal })))
}

type Mode = 'txn' | 'aborted' | 'copy' | 'stream' | 'waiter' | 'sleep'

function doomed(port: number, mode: Mode, steps: number, tag: string) {
  const child = spawn(process.execPath, [DOOMED, String(port), mode, String(steps), tag], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.push(child)
  const { line } = watchLines(child, `doomed client ${mode} ${tag}`)
  return {
    child,
    line,
    /** SIGKILL by its PID; resolves once it is gone (its sockets closed by the kernel). */
    async kill() {
      const gone = exited(child)
      child.kill('SIGKILL')
      expect((await gone).signal).toBe('SIGKILL')
    },
  }
}

function vmRssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (!m) throw new Error(`no VmRSS for ${pid}`)
  return Number(m[1]) / 1024
}

/** The error a session ended with (57P01 from a fast shutdown), or 'closed' for a socket that just closed. */
function sessionEnd(c: pg.Client): Promise<string> {
  let code: string | null = null
  c.on('error', (e: Error) => (code ??= (e as { code?: string }).code ?? null))
  // The error of the query that was running, when one was: pg hands it to the query instead.
  const connection = (c as unknown as { connection: NodeJS.EventEmitter }).connection
  connection.on('errorMessage', (e: { code?: string }) => (code ??= e.code ?? null))
  return new Promise((r) => c.once('end', () => r(code ?? 'closed')))
}

/** Resolves (with the time it took) when `p` does, fails after `ms`: a bound, not a wait. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<{ value: T; ms: number }> {
  const t0 = performance.now()
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)
  })
  try {
    const value = await Promise.race([p, bound])
    return { value, ms: performance.now() - t0 }
  } finally {
    clearTimeout(timer)
  }
}

describe('clients that are SIGKILLed', () => {
  it('50 client processes SIGKILLed at random points cost nothing', { timeout: 240_000 }, async () => {
    const seed = 0x7ab9e5
    const rand = prng(seed)
    const pick = (n: number) => 1 + Math.floor(rand() * n)
    const tail: string[] = []
    const serve: ServeProcess = startServe({
      data: 'memory',
      databases: ['postgres'],
      onLine: (l) => (tail.push(l), tail.length > 40 && tail.shift()),
    })
    started.push(serve.process)
    const port = await serve.ready
    const pid = serve.process.pid!

    const probe = client(port)
    probe.on('error', (e) => console.error('probe session error', e))
    await probe.connect()
    await probe.query('CREATE TABLE t (id serial PRIMARY KEY, v text NOT NULL)')
    await probe.query('CREATE PUBLICATION doomed_pub FOR TABLE t')
    const walsender = client(port, true)
    await walsender.connect()
    await walsender.query('CREATE_REPLICATION_SLOT doomed LOGICAL pgoutput')
    await walsender.end()

    // Scenarios: one process each, except `behind` (a holder in a transaction and
    // a session waiting for the backend behind it): 5 × 7 + 7 × 2 + 1 = 50 processes.
    type Scenario = 'txn' | 'aborted' | 'copy' | 'stream' | 'sleep' | 'behind'
    const deck: Scenario[] = ['txn']
    for (const s of ['txn', 'aborted', 'copy', 'stream', 'sleep', 'behind'] as const) for (let k = 0; k < 7; k++) deck.push(s)
    for (let i = deck.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1))
      ;[deck[i], deck[j]] = [deck[j], deck[i]]
    }

    const SLEEP_S = 2
    let killed = 0
    let committed = 0
    let rssAfter10: number | null = null
    const select1: Array<{ scenario: Scenario; ms: number }> = []

    for (const [i, scenario] of deck.entries()) {
      const tag = `${i}`
      const steps = pick(3)
      let kills: Array<ReturnType<typeof doomed>>
      if (scenario === 'behind') {
        const holder = doomed(port, 'txn', steps, `${tag}h`)
        await holder.line('ready')
        const waiter = doomed(port, 'waiter', 0, `${tag}w`)
        await waiter.line('ready')
        kills = rand() < 0.5 ? [holder, waiter] : [waiter, holder]
      } else if (scenario === 'stream') {
        const s = doomed(port, 'stream', steps, tag)
        await s.line('streaming')
        for (let n = 0; n < steps; n++) {
          await probe.query('INSERT INTO t (v) VALUES ($1)', [`committed-${tag}-${n}`])
          committed++
        }
        await s.line('ready')
        kills = [s]
      } else {
        const d = doomed(port, scenario, scenario === 'sleep' ? SLEEP_S : steps, tag)
        await d.line('ready')
        kills = [d]
      }

      const t0 = performance.now()
      for (const k of kills) await k.kill()
      killed += kills.length
      await probe.query('SELECT 1')
      const ms = performance.now() - t0
      select1.push({ scenario, ms })
      // PGlite cannot interrupt a running statement (server-session.ts, cancel()):
      // pg_sleep runs to its end first, then SELECT 1 has the same 1 s.
      expect(ms, `SELECT 1 after killing ${scenario} #${i}`).toBeLessThan(scenario === 'sleep' ? SLEEP_S * 1000 + 1000 : 1000)

      // What the dead sessions wrote is gone; every committed row is there.
      const rows = await probe.query(
        `SELECT count(*) FILTER (WHERE v LIKE 'doomed-%')::int AS doomed, count(*) FILTER (WHERE v LIKE 'committed-%')::int AS committed FROM t`,
      )
      expect(rows.rows, `after killing ${scenario} #${i}`).toEqual([{ doomed: 0, committed }])
      if (scenario === 'stream') {
        const slot = await probe.query(`SELECT active FROM pg_replication_slots WHERE slot_name = 'doomed'`)
        expect(slot.rows, `slot after killing stream #${i}`).toEqual([{ active: false }])
      }
      // A new connection is accepted and answers.
      const fresh = client(port)
      await fresh.connect()
      expect((await fresh.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }])
      await fresh.end()

      if (rssAfter10 === null && killed >= 10) rssAfter10 = vmRssMb(pid)
    }
    expect(killed).toBe(50)
    const rssAfter50 = vmRssMb(pid)

    const worst = (f: (s: Scenario) => boolean) => Math.max(...select1.filter((x) => f(x.scenario)).map((x) => x.ms))
    console.log(
      `killed-clients (seed ${seed}): server RSS ${rssAfter10!.toFixed(0)} MB after 10 kills, ${rssAfter50.toFixed(0)} MB after 50; ` +
        `SELECT 1 after a kill: worst ${worst((s) => s !== 'sleep').toFixed(0)} ms ` +
        `(${worst((s) => s === 'sleep').toFixed(0)} ms behind a pg_sleep(${SLEEP_S}) of a killed client)`,
    )
    for (const s of ['txn', 'aborted', 'copy', 'stream', 'sleep', 'behind'] as const) {
      const ms = select1.filter((x) => x.scenario === s).map((x) => x.ms)
      console.log(`  ${s.padEnd(7)} ×${ms.length}: SELECT 1 in ${ms.map((m) => m.toFixed(0)).join(', ')} ms`)
    }
    expect(rssAfter50).toBeLessThan(rssAfter10! + 150)

    // The server is still the one that started, and stops cleanly.
    expect(serve.process.exitCode, tail.join('\n')).toBeNull()
    await probe.end()
    const stop = await within(5000, 'SIGTERM', serve.stop())
    expect(stop.value).toBe(0)
  })
})

describe('stopping the server', () => {
  it('SIGTERM stops npm run serve within 5 s, durably with --data <dir>', { timeout: 240_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tabgres-killed-'))
    dirs.push(dir)

    /** The server itself (node --import tsx), or `npm run serve` in its own process group, as a terminal runs it. */
    async function start(how: 'server' | 'npm'): Promise<{ port: number; stop(signal: NodeJS.Signals): Promise<string> }> {
      if (how === 'server') {
        const serve = startServe({ data: dir, databases: ['postgres'] })
        started.push(serve.process)
        const port = await serve.ready
        return {
          port,
          async stop(signal) {
            serve.process.kill(signal)
            // The server's own exit code: 0 after closing every database.
            const { value, ms } = await within(5000, `${signal} to the server`, serve.exited)
            expect(value).toBe(0)
            return `server exited ${value} in ${ms.toFixed(0)} ms`
          },
        }
      }
      const npm = spawn('npm', ['run', 'serve', '--', '--port', '0', '--data', dir], {
        cwd: root,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      started.push(npm)
      const port = new Promise<number>((resolve, reject) => {
        let out = ''
        let rest = ''
        npm.stderr!.on('data', (d: Buffer) => (out += d))
        npm.stdout!.on('data', (d: Buffer) => {
          rest += d.toString('utf8')
          out += d
          let nl: number
          while ((nl = rest.indexOf('\n')) >= 0) {
            const m = LISTENING.exec(rest.slice(0, nl))
            rest = rest.slice(nl + 1)
            if (m) resolve(Number(m[1]))
          }
        })
        npm.once('exit', (code, signal) => reject(new Error(`npm run serve exited (${code ?? signal}):\n${out}`)))
      })
      // Every process of npm run serve (npm, sh, tsx, the server) holds this pipe:
      // it closes when the last of them is gone.
      const allGone = new Promise<void>((r) => npm.stdout!.once('close', () => r()))
      return {
        port: await port,
        async stop(signal) {
          const npmExit = exited(npm)
          // To the process group, as a terminal's Ctrl-C or `kill -TERM -<pgid>`.
          process.kill(-npm.pid!, signal)
          const { ms } = await within(5000, `${signal} to npm run serve`, Promise.all([allGone, npmExit]))
          const e = await npmExit
          return `npm run serve (npm exit ${e.code ?? e.signal}) gone in ${ms.toFixed(0)} ms`
        },
      }
    }

    const expected: string[] = []
    const cycles: Array<[how: 'server' | 'npm', signal: NodeJS.Signals]> = [
      ['server', 'SIGTERM'],
      ['npm', 'SIGTERM'],
      ['npm', 'SIGINT'],
      ['server', 'SIGINT'],
    ]
    const report: string[] = []
    for (const [cycle, [how, signal]] of cycles.entries()) {
      const server = await start(how)
      const a = client(server.port)
      const aEnd = sessionEnd(a)
      await a.connect()
      if (cycle === 0) {
        await a.query('CREATE TABLE kept (id serial PRIMARY KEY, v text NOT NULL)')
        await a.query('CREATE PUBLICATION kept_pub FOR TABLE kept')
        // (Not SELECT pg_create_logical_replication_slot(): PGlite's own runs, 55000 wal_level.)
        const w = client(server.port, true)
        await w.connect()
        await w.query('CREATE_REPLICATION_SLOT kept LOGICAL pgoutput')
        await w.end()
      }
      // What the earlier servers committed is there, and what they had not is not.
      expect((await a.query('SELECT v FROM kept ORDER BY id')).rows.map((r) => r.v)).toEqual(expected)
      for (let n = 0; n < 3; n++) {
        await a.query('INSERT INTO kept (v) VALUES ($1)', [`committed-${cycle}-${n}`])
        expected.push(`committed-${cycle}-${n}`)
      }

      // One replication stream, streaming (the slot's first commit has arrived).
      const rep = client(server.port, true)
      const repEnd = sessionEnd(rep)
      await rep.connect()
      const conn = (rep as unknown as { connection: NodeJS.EventEmitter }).connection
      const streamed = new Promise<void>((r) =>
        conn.on('copyData', ({ chunk }: { chunk: Buffer }) => chunk[0] === 0x77 && chunk[25] === 0x43 && r()),
      )
      const replicating = rep.query(`START_REPLICATION SLOT kept LOGICAL 0/0 (proto_version '1', publication_names 'kept_pub')`)
      replicating.catch(() => {}) // its error is the session's end, seen by sessionEnd
      await streamed
      // Then one session idle in a transaction with an uncommitted row (a stream
      // reads nothing while a transaction holds the backend: started first).
      const idle = client(server.port)
      const idleEnd = sessionEnd(idle)
      await idle.connect()
      await idle.query('BEGIN')
      await idle.query(`INSERT INTO kept (v) VALUES ('uncommitted-${cycle}')`)
      const ends = [aEnd, idleEnd, repEnd]

      const stopped = await server.stop(signal)
      const ended = await Promise.all(ends)
      for (const e of ended) expect(['57P01', 'closed']).toContain(e)
      report.push(`${how} ${signal}: ${stopped}; sessions ended with ${ended.join(', ')}`)
    }

    // A last start on the same directory: the committed rows, none of the uncommitted ones.
    const serve = startServe({ data: dir, databases: ['postgres'] })
    started.push(serve.process)
    const c = client(await serve.ready)
    await c.connect()
    expect((await c.query('SELECT v FROM kept ORDER BY id')).rows.map((r) => r.v)).toEqual(expected)
    expect((await c.query(`SELECT count(*)::int AS n FROM kept WHERE v LIKE 'uncommitted-%'`)).rows).toEqual([{ n: 0 }])
    expect((await c.query(`SELECT slot_name FROM pg_replication_slots`)).rows).toEqual([{ slot_name: 'kept' }])
    await c.end()
    expect(await serve.stop()).toBe(0)
    console.log(`stopping the server:\n  ${report.join('\n  ')}`)
  })
})
