// Zero's custom mutators on zero-cache in the tab: zero-cache posts each push
// to ZERO_MUTATE_URL, which in the tab is a handler of the page (startZeroCache's
// `mutate`), where the server side of the mutators runs on tabgres
// (`zeroTabgres`, Zero's PushProcessor). The server's version of a write wins,
// and an application error reaches the client's `.server` result.

import { ApplicationError, PushProcessor } from '@rocicorp/zero/server'
import { ANYONE_CAN_DO_ANYTHING, boolean, createSchema, definePermissions, defineMutatorWithType, defineMutatorsWithType, string, table, Zero } from '@rocicorp/zero'
import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase, type Database, type Queryable } from '../../src/client/index'
import { startZeroCache, zeroTabgres, type ZeroCache } from '../../src/zero/tab/index'

const BUNDLE = new URL('/zero-cache/zero-cache.js', location.origin).href

const todo = table('todo').columns({ id: string(), title: string(), done: boolean() }).primaryKey('id')
const schema = createSchema({ tables: [todo], enableLegacyQueries: true })
type Row = { id: string; title: string; done: boolean }
type Args = { id: string; title: string }

// The client's optimistic version and the server's authoritative one, as an app defines them.
const defineMutator = defineMutatorWithType<typeof schema, unknown, Queryable>()
const create = (where: 'client' | 'server') =>
  defineMutator<Args>(async ({ tx, args }) => {
    if (where === 'server' && tx.location === 'server') {
      // Checked on the server only: the client's optimistic write goes ahead and is then undone.
      if (!args.title) throw new ApplicationError('a todo needs a title', { details: { id: args.id } })
      // The server stamps what it wrote, through the tabgres transaction itself.
      await tx.dbTransaction.wrappedTransaction.query(`insert into todo values ($1, $2 || ' (server)', false)`, [args.id, args.title])
    } else await tx.mutate.todo.insert({ id: args.id, title: args.title, done: false })
  })
const defineMutators = defineMutatorsWithType<typeof schema>()
const clientMutators = defineMutators({ todo: { create: create('client') } })
const serverMutators = defineMutators({ todo: { create: create('server') } })

describe("Zero's custom mutators on zero-cache in the tab", () => {
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

  it('runs the server side in the page on tabgres, and reports application errors to the client', async () => {
    const [upstream, cvr, change] = await Promise.all(['up', 'cvr', 'chg'].map((n) => openDatabase(`zm-${n}-${id}`)))
    open.push(upstream!, cvr!, change!)
    await upstream!.exec(`create table todo (id text primary key, title text not null, done boolean not null default false)`)
    const processor = new PushProcessor(zeroTabgres(schema, upstream!))
    const pushes: string[] = []
    // Each push's response, as the page's endpoint sent it back to zero-cache.
    const responses: { mutations?: { id: { id: number }; result: unknown }[] }[] = []
    const pushed: (() => void)[] = []
    const responseFor = async (mutationID: number) => {
      const find = () => responses.flatMap((r) => r.mutations ?? []).find((m) => m.id.id === mutationID)
      while (!find()) await new Promise<void>((r) => pushed.push(r))
      return find()!
    }
    zeroCache = startZeroCache({
      upstream: upstream!,
      cvr,
      change,
      url: BUNDLE,
      replicaStore: `zm-replica-${id}`,
      onLog: (l, t) => void lines.push(`${l} ${t}`),
      mutate: async (request) => {
        pushes.push(new URL(request.url).searchParams.get('appID') ?? '')
        const response = await processor.process(serverMutators, request)
        responses.push(response as (typeof responses)[number])
        for (const w of pushed.splice(0)) w()
        return Response.json(response)
      },
    })
    await zeroCache.ready.catch((e: Error) => {
      throw new Error(`${e.message}\n${lines.slice(-40).join('\n')}`)
    })
    // Reads are legacy queries here, which zero-cache checks against the deployed permissions.
    const permissions = await definePermissions<Record<string, never>, typeof schema>(schema, () => ({ todo: ANYONE_CAN_DO_ANYTHING }))
    await upstream!.query(`update zero.permissions set permissions = $1`, [JSON.stringify(permissions)])
    const failed = zeroCache.exited.then((code) => {
      throw new Error(`zero-cache exited (${code}):\n${lines.slice(-40).join('\n')}`)
    })
    z = new Zero({ server: zeroCache.server, schema, userID: 'anon', kvStore: 'mem', mutators: clientMutators })
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

    const done = z.mutate(clientMutators.todo.create({ id: '1', title: 'custom' }))
    // Optimistic first, then the server's row, replicated back through zero-cache.
    await Promise.race([until((rows) => rows.some((r) => r.title === 'custom (server)')), failed])
    await expect(done.server).resolves.toMatchObject({ type: 'success' })
    expect((await upstream!.query<Row>(`select id, title, done from todo`)).rows).toEqual([{ id: '1', title: 'custom (server)', done: false }])
    expect(pushes).toEqual(['zero'])

    // An application error on the server: nothing is written upstream, the mutation is still acknowledged,
    // the client learns why, and its optimistic row goes away.
    const rejected = z.mutate(clientMutators.todo.create({ id: '2', title: '' }))
    await expect(rejected.client).resolves.toMatchObject({ type: 'success' })
    const result = await Promise.race([rejected.server, failed])
    expect(result).toMatchObject({ type: 'error', error: { type: 'app', message: 'a todo needs a title', details: { id: '2' } } })
    expect(await Promise.race([responseFor(2), failed])).toMatchObject({ result: { error: 'app', message: 'a todo needs a title' } })
    await Promise.race([until((rows) => rows.length === 1), failed])
    expect((await upstream!.query(`select count(*)::int as n from todo`)).rows).toEqual([{ n: 1 }])
    // zero_0.clients records each mutation the server processed, the failed one too, as on any Zero server.
    expect((await upstream!.query(`select "lastMutationID"::int as n from zero_0.clients`)).rows).toEqual([{ n: 2 }])
    view.destroy()
  })
})
