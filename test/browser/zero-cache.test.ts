// zero-cache 1.9.0, unmodified, in a worker of the page (src/zero/tab), with
// tabgres databases of the same page as its upstream, CVR and change
// databases, reached through the worker's loopback network and db.connect():
// it boots, copies the upstream into its SQLite replica, streams changes
// into it, and after a restart resumes from IndexedDB without a full resync.

import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../src/client/index'
import { EXIT_SUSPENDED, startZeroCache, type ZeroCache, type ZeroCacheOptions } from '../../src/zero/tab/start'
import { blobsInIndexedDB } from '../support/idb-blobs'

// Built by the browser project's global setup (npm run build:zero) and served as built.
const BUNDLE = new URL('/zero-cache/zero-cache.js', location.origin).href

interface Todo {
  id: string
  title: string
  done: number
}

/** Checks `ok` now and after each change of the replica, until it holds; fails if zero-cache exits first. */
function until(zero: ZeroCache, ok: () => Promise<boolean>): Promise<void> {
  return new Promise((resolve, reject) => {
    let checking = false
    let again = false
    const check = async () => {
      if (checking) return void (again = true)
      checking = true
      try {
        do {
          again = false
          if (await ok()) return (off(), resolve())
        } while (again)
      } catch (e) {
        off()
        reject(e)
      } finally {
        checking = false
      }
    }
    const off = zero.onReplicaChange(() => void check())
    void zero.exited.then((code) => (off(), reject(new Error(`zero-cache exited (${code})`))))
    void check()
  })
}

describe('zero-cache in the tab', () => {
  const id = crypto.randomUUID().slice(0, 8)
  const open: Database[] = []
  let zero: ZeroCache | undefined
  let dbs: { upstream: Database; cvr: Database; change: Database }
  const lines: string[] = []

  async function start(): Promise<ZeroCache> {
    const options: ZeroCacheOptions = { ...dbs, url: BUNDLE, replicaStore: `zero-replica-${id}`, onLog: (level, text) => void lines.push(`${level} ${text}`) }
    const z = startZeroCache(options)
    await z.ready.catch((e: Error) => {
      throw new Error(`${e.message}\n--- zero-cache's last lines ---\n${lines.slice(-40).join('\n')}`)
    })
    return z
  }

  const todos = (z: ZeroCache) => z.queryReplica<Todo>('select id, title, done from todo order by id')

  afterAll(async () => {
    await zero?.stop(20_000)
    for (const db of open) await db.close()
  })

  it('boots on three tabgres databases, copies the upstream into its replica and streams changes into it', async () => {
    const [upstream, cvr, change] = await Promise.all(['up', 'cvr', 'chg'].map((n) => openDatabase(`zero-${n}-${id}`)))
    open.push(upstream!, cvr!, change!)
    dbs = { upstream: upstream!, cvr: cvr!, change: change! }
    await upstream!.exec(`create table todo (id text primary key, title text not null, done boolean not null default false);
      insert into todo values ('1', 'first', false), ('2', 'second', true);
      -- Larger than a socket read (64 KiB) and a stream's buffer: its COPY once left a connection stuck.
      create table note (id int primary key, body text not null);
      insert into note select i, repeat('n', 60) from generate_series(1, 3000) i`)
    zero = await start()
    expect(await todos(zero)).toEqual([
      { id: '1', title: 'first', done: 0 },
      { id: '2', title: 'second', done: 1 },
    ])
    expect(await zero.queryReplica('select count(*) as n, sum(length(body)) as chars from note')).toEqual([{ n: 3000, chars: 180_000 }])
    // Its three databases: the shard schema and publications upstream, the CVR and change-log schemas.
    const schemas = async (db: Database) => (await db.query<{ nspname: string }>(`select nspname from pg_namespace where nspname like 'zero%'`)).rows.map((r) => r.nspname)
    expect(await schemas(upstream!)).toContain('zero_0')
    expect(await schemas(cvr!)).toContain('zero_0/cvr')
    expect(await schemas(change!)).toContain('zero_0/cdc')

    await upstream!.exec(`insert into todo values ('3', 'third', false); update todo set done = true where id = '1'; delete from todo where id = '2'`)
    const z = zero
    await until(z, async () => JSON.stringify(await todos(z)) === JSON.stringify([{ id: '1', title: 'first', done: 1 }, { id: '3', title: 'third', done: 0 }]))
  })

  it('resumes after a restart from the replica kept in IndexedDB, without a full resync, with what changed meanwhile', async () => {
    expect(await zero!.stop(20_000)).toBe(0)
    zero = undefined
    await dbs.upstream.exec(`insert into todo values ('4', 'while stopped', false)`)
    const before = lines.length
    zero = await start()
    const z = zero
    await until(z, async () => (await todos(z)).some((t) => t.id === '4'))
    expect((await todos(z)).map((t) => t.id)).toEqual(['1', '3', '4'])
    // A full resync copies every table again: it logs how many workers copy how many tables.
    expect(lines.slice(before).filter((l) => /workers to copy/.test(l))).toEqual([])
  })

  it('a second zero-cache on the same replica store waits until the first has ended, then resumes the replica', async () => {
    // As after a reload: the new page's zero-cache starts while the old page's is still ending.
    const second = startZeroCache({ ...dbs, url: BUNDLE, replicaStore: `zero-replica-${id}`, onLog: (level, text) => void lines.push(`${level} ${text}`) })
    let settled = false
    void second.ready.then(
      () => (settled = true),
      () => (settled = true),
    )
    const waiting = async () => ((await navigator.locks.query()).pending ?? []).filter((l) => l.name === `tabgres:zero-replica:zero-replica-${id}`).length
    await expect.poll(waiting, { timeout: 60_000 }).toBe(1)
    expect(settled).toBe(false)
    const before = lines.length
    expect(await zero!.stop(20_000)).toBe(0)
    zero = second
    await second.ready
    await dbs.upstream.exec(`insert into todo values ('5', 'after the handover', false)`)
    await until(second, async () => (await todos(second)).some((t) => t.id === '5'))
    expect((await todos(second)).map((t) => t.id)).toEqual(['1', '3', '4', '5'])
    expect(lines.slice(before).filter((l) => /workers to copy/.test(l))).toEqual([])
  })

  it('the page entering the back/forward cache ends zero-cache and frees its replica store; shown again, a new one resumes it', async () => {
    // What the browser fires as it puts this page in the cache, and as it takes it out.
    dispatchEvent(new PageTransitionEvent('pagehide', { persisted: true }))
    expect(await zero!.exited).toBe(EXIT_SUSPENDED)
    // Its lock goes with its worker (at once in Chromium, a moment later in Firefox and WebKit): another page could take it.
    const taken = await navigator.locks.request(`tabgres:zero-replica:zero-replica-${id}`, { signal: AbortSignal.timeout(30_000) }, async () => true)
    expect(taken).toBe(true)
    dispatchEvent(new PageTransitionEvent('pageshow', { persisted: true }))
    // The databases work again (their links came back, as after a takeover), and a new zero-cache resumes the replica.
    await dbs.upstream.exec(`insert into todo values ('6', 'after the cache', false)`)
    const before = lines.length
    zero = await start()
    const z = zero
    await until(z, async () => (await todos(z)).some((t) => t.id === '6'))
    expect((await todos(z)).map((t) => t.id)).toEqual(['1', '3', '4', '5', '6'])
    expect(lines.slice(before).filter((l) => /workers to copy/.test(l))).toEqual([])
  })

  it('stores bytes, never a Blob, in IndexedDB: its replica store and its three databases', async () => {
    const found = await blobsInIndexedDB()
    expect(found.databases.filter((n) => n.includes(id)).length, found.databases.join()).toBeGreaterThanOrEqual(4)
    expect(found.blobs).toEqual([])
  })
})
