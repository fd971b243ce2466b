// Every tab uses the database (client/leadership.ts): several Databases on
// one name in this page stand for tabs (each spawns its own worker and holds
// its own page lock); terminate() is a tab that died, killWorker() a crashed
// worker. Every wait is on a promise or a message.

import { describe, expect, it } from 'vitest'
import { openDatabase, type Database, type LinkEvent } from '../../src/client'

let counter = 0
const unique = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${++counter}`

/** Resolves with the next event of `kind` that `events` hears. */
function nextEvent(events: LinkEvent[], waiters: (() => void)[], kind: LinkEvent['type']): Promise<LinkEvent> {
  const seen = events.length
  return new Promise((resolve) => {
    const check = () => {
      const e = events.slice(seen).find((x) => x.type === kind)
      if (e) resolve(e)
      else waiters.push(check)
    }
    check()
  })
}

/** A promise and what resolves it: a test waits for a point another task reaches. */
function latch(): [Promise<void>, () => void] {
  let fire!: () => void
  const reached = new Promise<void>((r) => (fire = r))
  return [reached, fire]
}

function tab(name: string) {
  const events: LinkEvent[] = []
  const waiters: (() => void)[] = []
  const db = openDatabase(name, {
    onLeaderChange: (e) => {
      events.push(e)
      for (const w of waiters.splice(0)) w()
    },
  })
  return { db, events, next: (kind: LinkEvent['type']) => nextEvent(events, waiters, kind) }
}

describe('every tab uses the database', () => {
  it('a second tab works through the first one\'s worker; its transactions are isolated', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const b = await tab(name).db
    try {
      expect(a.leads).toBe(true)
      expect(b.leads).toBe(false)
      await b.exec('CREATE TABLE t (id int PRIMARY KEY, v text)')
      await b.query('INSERT INTO t VALUES (1, $1)', ['from b'])
      expect((await a.query('SELECT v FROM t')).rows).toEqual([{ v: 'from b' }])
      await b.transaction(async (tx) => {
        await tx.query(`INSERT INTO t VALUES (2, 'in tx')`)
        expect((await tx.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 2 }])
      })
      expect((await a.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 2 }])
    } finally {
      await b.close()
      await a.close()
    }
  })

  it('when the leading tab dies, the other takes over; acknowledged writes are there', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const tb = tab(name)
    const b = await tb.db
    try {
      await a.exec('CREATE TABLE t (id int PRIMARY KEY)')
      await b.query('INSERT INTO t VALUES (1)')
      const lost = tb.next('lost')
      const linked = tb.next('linked')
      a.terminate()
      await lost
      expect(await linked).toMatchObject({ local: true })
      expect(b.leads).toBe(true)
      await b.query('INSERT INTO t VALUES (2)')
      expect((await b.query('SELECT id FROM t ORDER BY id')).rows).toEqual([{ id: 1 }, { id: 2 }])
    } finally {
      await b.close()
    }
  })

  it('a call in flight when the leader goes fails with 08006; the next call reaches the new leader', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const tb = tab(name)
    const b = await tb.db
    const c = await tab(name).db
    try {
      // a's open transaction holds PGlite's lock, so b's query waits in a's worker.
      const [entered, inside] = latch()
      void a.transaction(async () => (inside(), new Promise(() => {}))).catch(() => {})
      await entered
      const waiting = b.query('SELECT 1')
      await b.stats() // answered after the query reached the worker (one port, in order)
      a.killWorker()
      const slow = waiting
      await expect(slow).rejects.toMatchObject({ code: '08006' })
      expect((await b.query('SELECT 2 AS x')).rows).toEqual([{ x: 2 }])
      expect((await c.query('SELECT 3 AS x')).rows).toEqual([{ x: 3 }])
      // a's page lives on: its new worker is a candidate, and a reaches the leader.
      expect((await a.query('SELECT 4 AS x')).rows).toEqual([{ x: 4 }])
    } finally {
      await Promise.all([a.close(), b.close(), c.close()])
    }
  })

  it('a follower tab that dies mid-transaction does not block the others: its transaction rolls back', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const b = await tab(name).db
    try {
      await a.exec('CREATE TABLE t (id int)')
      const [entered, inside] = latch()
      void b
        .transaction(async (tx) => {
          await tx.query('INSERT INTO t VALUES (1)')
          inside()
          await new Promise(() => {}) // never ends: the tab dies here
        })
        .catch(() => {})
      await entered
      b.terminate()
      expect((await a.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }])
    } finally {
      await a.close()
    }
  })

  it('a stream re-attaches to each new leader by itself: every transaction once, in order, none missing', async () => {
    const name = unique('tabs')
    const streaming = tab(name)
    const tabs = [await tab(name).db, await streaming.db, await tab(name).db]
    const [a, b] = tabs
    try {
      await a.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR ALL TABLES`)
      await a.createSlot('s')
      // b streams (a follower at first), acknowledging each commit as a consumer that applied it.
      const stream = await b.startReplication({ slot: 's', options: { proto_version: '1', publication_names: 'p' } })
      const N = 60
      const received: number[] = []
      const consumed = (async () => {
        for await (const m of stream.messages()) {
          if (m.kind !== 'xlog') continue
          if (m.message.tag === 'I' && m.message.new.columns[0].kind === 't') received.push(Number(m.message.new.columns[0].value))
          if (m.message.tag === 'C') {
            stream.ack(m.message.endLsn)
            if (received.length >= N) return
          }
        }
      })()
      // Writes from the tab that never dies here; a retry after 08006 may find its row there already.
      const c = tabs[2]
      for (let i = 1; i <= N; i++) {
        for (;;) {
          try {
            await c.query('INSERT INTO t VALUES ($1) ON CONFLICT DO NOTHING', [i])
            break
          } catch (e) {
            if ((e as { code?: string }).code !== '08006') throw e
          }
        }
        // The leader's worker is killed three times, whichever tab it is in (b's own included).
        if (i % 15 === 0 && i < N) {
          const leader = tabs.find((d) => d.leads)
          expect(leader).toBeDefined()
          leader!.killWorker()
        }
      }
      await consumed
      expect(received).toEqual(Array.from({ length: N }, (_, i) => i + 1))
      // The stream's tab reached a new leader after each of the three kills (its first link aside).
      expect(streaming.events.filter((e) => e.type === 'linked' && e.ms > 0).length).toBeGreaterThanOrEqual(3)
      expect((await c.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: N }])
      await stream.close()
    } finally {
      await Promise.all(tabs.map((d) => d.close()))
    }
  })

  it('a wire session on another tab\'s worker ends as a lost connection when that tab dies', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const b = await tab(name).db
    try {
      const port = await b.connect()
      const received: (ArrayBuffer | null)[] = []
      let wake = () => {}
      port.onmessage = (ev) => {
        received.push(ev.data)
        wake()
      }
      const until = async (pred: () => boolean) => {
        while (!pred()) await new Promise<void>((r) => (wake = r))
      }
      // StartupMessage (protocol 3.0): the session answers (AuthenticationOk ... ReadyForQuery).
      const params = new TextEncoder().encode('user\0postgres\0database\0postgres\0\0')
      const startup = new Uint8Array(8 + params.length)
      new DataView(startup.buffer).setInt32(0, startup.length)
      new DataView(startup.buffer).setInt32(4, 196608)
      startup.set(params, 8)
      port.postMessage(startup.buffer, [startup.buffer])
      await until(() => received.length > 0)
      expect(received[0]).toBeInstanceOf(ArrayBuffer)
      a.terminate()
      await until(() => received.includes(null))
      // b goes on: its own worker took over.
      expect((await b.query('SELECT 1 AS x')).rows).toEqual([{ x: 1 }])
    } finally {
      await b.close()
    }
  })

  it('the leader closing hands over: a follower\'s open transaction fails with 08006, its next calls reach the next leader', async () => {
    const name = unique('tabs')
    const a = await tab(name).db
    const b = await tab(name).db
    try {
      await a.exec('CREATE TABLE t (id int)')
      const [entered, inside] = latch()
      const [closed, proceed] = latch()
      const tx = b.transaction(async (q) => {
        await q.query('INSERT INTO t VALUES (1)')
        inside()
        await closed
        await q.query('INSERT INTO t VALUES (2)')
      })
      await entered
      // a's close waits for nothing of b's: b's transaction rolls back with the handover.
      await a.close()
      proceed()
      await expect(tx).rejects.toMatchObject({ code: '08006' })
      expect((await b.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }])
      expect(b.leads).toBe(true)
    } finally {
      await b.close()
    }
  })
})
