// A Zero client (@rocicorp/zero 1.9.0) in the page, synced by zero-cache
// running in a worker of the same page (src/zero/tab) from tabgres: its
// WebSocket goes over a MessagePort. A write in tabgres updates a live Zero
// query; a write through Zero's mutators lands in tabgres.

import { ANYONE_CAN_DO_ANYTHING, createSchema, boolean, definePermissions, string, table, Zero } from '@rocicorp/zero'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database } from '../../src/client/index'
import { startZeroCache, type ZeroCache } from '../../src/zero/tab/start'

const BUNDLE = new URL('/zero-cache/zero-cache.js', location.origin).href

const todo = table('todo').columns({ id: string(), title: string(), done: boolean() }).primaryKey('id')
const schema = createSchema({ tables: [todo], enableLegacyQueries: true, enableLegacyMutators: true })

type Row = { id: string; title: string; done: boolean }

describe('a Zero client on zero-cache in the tab', () => {
  const id = crypto.randomUUID().slice(0, 8)
  const open: Database[] = []
  let zeroCache: ZeroCache | undefined
  let z: Zero<typeof schema> | undefined
  const lines: string[] = []

  afterAll(async () => {
    await z?.close()
    await zeroCache?.stop(20_000)
    for (const db of open) await db.close()
  })

  it('shows tabgres writes in a live query, and writes through Zero’s mutators into tabgres', async () => {
    const [upstream, cvr, change] = await Promise.all(['up', 'cvr', 'chg'].map((n) => openDatabase(`zc-${n}-${id}`)))
    open.push(upstream!, cvr!, change!)
    await upstream!.exec(`create table todo (id text primary key, title text not null, done boolean not null default false);
      insert into todo values ('1', 'first', false)`)
    zeroCache = startZeroCache({ upstream: upstream!, cvr, change, url: BUNDLE, replicaStore: `zc-replica-${id}`, onLog: (l, t) => void lines.push(`${l} ${t}`) })
    await zeroCache.ready.catch((e: Error) => {
      throw new Error(`${e.message}\n${lines.slice(-40).join('\n')}`)
    })
    // The rules a deployment gives zero-cache (zero-deploy-permissions writes the same row): anyone reads and writes todo.
    const permissions = await definePermissions<Record<string, never>, typeof schema>(schema, () => ({ todo: ANYONE_CAN_DO_ANYTHING }))
    await upstream!.query(`update zero.permissions set permissions = $1`, [JSON.stringify(permissions)])
    z = new Zero({ server: zeroCache.server, schema, userID: 'anon', kvStore: 'mem' })
    const view = z.materialize(z.query.todo.orderBy('id', 'asc'))
    let latest: readonly Row[] = []
    const waiters: (() => void)[] = []
    view.addListener((rows) => {
      latest = rows as readonly Row[]
      for (const w of waiters.splice(0)) w()
    })
    const until = async (ok: (rows: readonly Row[]) => boolean) => {
      while (!ok(latest)) await new Promise<void>((r) => waiters.push(r))
    }
    const failed = zeroCache.exited.then((code) => {
      throw new Error(`zero-cache exited (${code}):\n${lines.slice(-40).join('\n')}`)
    })
    await Promise.race([until((rows) => rows.length === 1), failed])
    expect(latest.map(({ id, title, done }) => ({ id, title, done }))).toEqual([{ id: '1', title: 'first', done: false }])

    await upstream!.exec(`insert into todo values ('2', 'from tabgres', true)`)
    await Promise.race([until((rows) => rows.some((r) => r.id === '2')), failed])

    await z.mutate.todo.insert({ id: '3', title: 'from zero', done: false })
    // zero-cache applies it upstream, and replicates it back: check tabgres at each change of the replica.
    const upstreamRows = async () => (await upstream!.query<Row>(`select id, title, done from todo order by id`)).rows
    await Promise.race([
      new Promise<void>((resolve) => {
        const check = async () => {
          if ((await upstreamRows()).length === 3) (off(), resolve())
        }
        const off = zeroCache!.onReplicaChange(() => void check())
        void check()
      }),
      failed,
    ])
    expect(await upstreamRows()).toEqual([
      { id: '1', title: 'first', done: false },
      { id: '2', title: 'from tabgres', done: true },
      { id: '3', title: 'from zero', done: false },
    ])
    await Promise.race([until((rows) => rows.length === 3), failed])
    view.destroy()
  })
})
