// The Zero panel: the same todos through Rocicorp's Zero. zero-cache runs in
// a worker of this tab (tabgres/zero) with the primary as its upstream and
// two more tabgres databases for its client view records and change log; a
// Zero client in the page syncs from it over a MessagePort. A write here goes
// through Zero's mutators into the primary, so it shows in the App panel, the
// inspector and the replica; a write there reaches this list through
// zero-cache's replication slot.
//
// Loaded only once the rest of the page is up (main.ts imports it lazily):
// zero-cache's first sync must not delay the database's first answer.

import { ANYONE_CAN_DO_ANYTHING, boolean, createSchema, definePermissions, number, string, table, Zero } from '@rocicorp/zero'
import { openDatabase, type Database } from '../src/client'
import { EXIT_SUSPENDED, startZeroCache, type ZeroCache } from '../src/zero/tab'
import { h } from './dom'

// A subset of the table's columns is enough for Zero: created_at keeps its default.
const todos = table('todos').columns({ id: number(), title: string(), done: boolean() }).primaryKey('id')
const schema = createSchema({ tables: [todos], enableLegacyQueries: true, enableLegacyMutators: true })
type Todo = { id: number; title: string; done: boolean }

export interface ZeroPanelOptions {
  primary: Database
  /** The playground's database: zero-cache's own databases, replica and lock are named after it. */
  name: string
  root: HTMLElement
  /** The panel's status pill. */
  status: (text: string, state?: 'busy' | 'ok' | 'bad') => void
  onError: (e: unknown) => void
}

/** The next time this page is shown again from the back/forward cache. */
const shownAgain = () =>
  new Promise<void>((resolve) => {
    const onShow = (e: PageTransitionEvent) => void (e.persisted && (removeEventListener('pageshow', onShow), resolve()))
    addEventListener('pageshow', onShow)
  })

export async function startZeroPanel(options: ZeroPanelOptions): Promise<ZeroCache> {
  const { primary, name, root, status, onError } = options
  /** Held by the tab whose zero-cache runs. */
  const ZERO_LOCK = `${name}:zero-cache`
  /** The replica's identity: a full resync makes a new one. Kept per browser to tell a resumed replica from a new one. */
  const VERSION_KEY = `${name}-zero-replica-version`
  const list = h('ul', { class: 'todos', 'data-testid': 'zero-list' })
  const input = h('input', { type: 'text', placeholder: 'Add through Zero', 'data-testid': 'zero-input', 'aria-label': 'new todo through Zero', disabled: true })
  const add = h('button', { type: 'submit', 'data-testid': 'zero-add', disabled: true }, 'Add')
  let z: Zero<typeof schema> | undefined
  const form = h(
    'form',
    {
      class: 'todo-form',
      onsubmit: (ev: Event) => {
        ev.preventDefault()
        const title = input.value.trim()
        if (!title || !z) return
        input.value = ''
        void insert(z, title).catch(onError)
      },
    },
    input,
    add,
  )
  root.replaceChildren(form, list)

  // The id comes from the primary's own sequence, as the App panel's INSERTs take it, so the two never collide.
  const insert = async (zero: Zero<typeof schema>, title: string) => {
    const [{ id }] = (await primary.query<{ id: number }>(`SELECT nextval('todos_id_seq')::int AS id`)).rows
    await zero.mutate.todos.insert({ id: id!, title, done: false })
  }

  // One zero-cache per playground database (its replica is one per database here): it runs in the first tab that gets here,
  // and another tab's panel starts its own once that tab has gone (a Web Lock, held while this page lives).
  // Let go when the page enters the back/forward cache (below): a frozen page must not keep another tab's panel waiting.
  let releaseLock = () => {}
  const hold = (lock: Lock | null) => lock && new Promise<void>((r) => (releaseLock = r))
  const free = await new Promise<boolean>((r) => void navigator.locks.request(ZERO_LOCK, { ifAvailable: true }, (lock) => (r(lock !== null), hold(lock))))
  if (!free) {
    status('zero-cache: runs in another tab of this playground; this panel starts its own when that tab closes')
    await new Promise<void>((r) => void navigator.locks.request(ZERO_LOCK, (lock) => (r(), hold(lock))))
  }
  status('zero-cache: opening its databases…')
  const started = performance.now()
  // Whoever still holds these is a tab that ran zero-cache before and is going away (the page before a
  // reload, or a closed tab): its workers end in a moment, so wait for them rather than fail with 55006.
  const [cvr, change] = await Promise.all([
    openDatabase(`${name}-zero-cvr`, { onLocked: 'wait' }),
    openDatabase(`${name}-zero-change`, { onLocked: 'wait' }),
  ])
  status('zero-cache: starting in a worker…')
  const zeroCache = startZeroCache({
    upstream: primary,
    cvr,
    change,
    url: new URL('./zero-cache/zero-cache.js', document.baseURI),
    replicaStore: `${name}-zero-replica`,
    // Its info lines (hundreds per visit, each a long JSON) would only crowd the page's console.
    onLog: (level, text) => void (level === 'error' ? console.error(`[zero-cache] ${text}`) : level === 'warn' ? console.warn(`[zero-cache] ${text}`) : 0),
  })
  void zeroCache.exited.then(async (code) => {
    if (code !== EXIT_SUSPENDED) return status(`zero-cache exited (${code})`, code === 0 ? 'busy' : 'bad')
    // The page went into the back/forward cache and zero-cache's worker was ended there (src/zero/tab/start.ts):
    // everything of this run lets go, and a new one starts when the page is shown again, on the replica kept.
    input.disabled = add.disabled = true
    void z?.close()
    z = undefined
    void cvr.close()
    void change.close()
    releaseLock()
    document.body.dataset.zeroReady = 'false'
    await shownAgain()
    status('zero-cache: starting again (the page was in the back/forward cache)…')
    await startZeroPanel(options).then(() => void (document.body.dataset.zeroReady = 'true'), onError)
  })
  await zeroCache.ready
  const readyMs = Math.round(performance.now() - started)

  const [{ replicaVersion }] = await zeroCache.queryReplica<{ replicaVersion: string }>(`SELECT replicaVersion FROM "_zero.replicationConfig"`)
  const resumed = localStorage.getItem(VERSION_KEY) === replicaVersion
  localStorage.setItem(VERSION_KEY, replicaVersion!)
  root.dataset.replicaVersion = replicaVersion
  root.dataset.resumed = String(resumed)

  // The rules a deployment gives zero-cache (zero-deploy-permissions writes this row): anyone reads and writes todos.
  const permissions = JSON.stringify(await definePermissions<Record<string, never>, typeof schema>(schema, () => ({ todos: ANYONE_CAN_DO_ANYTHING })))
  await primary.query(`UPDATE zero.permissions SET permissions = $1 WHERE permissions IS DISTINCT FROM $1::jsonb`, [permissions])

  const render = (rows: readonly Todo[]) => {
    const items = rows.map((t) =>
      h(
        'li',
        { class: t.done ? 'done' : '', 'data-testid': 'zero-item' },
        h('input', {
          type: 'checkbox',
          checked: t.done,
          'aria-label': `done: ${t.title}`,
          onchange: () => void z?.mutate.todos.update({ id: t.id, done: !t.done }).catch(onError),
        }),
        h('span', { class: 'title' }, t.title),
        h('button', { class: 'icon', title: 'delete', 'aria-label': `delete ${t.title}`, onclick: () => void z?.mutate.todos.delete({ id: t.id }).catch(onError) }, '✕'),
      ),
    )
    list.replaceChildren(...items)
    if (items.length === 0) list.append(h('li', { class: 'empty' }, 'Nothing yet.'))
  }
  // By default Zero's client reloads the whole page when zero-cache no longer knows its client state (after
  // zero-cache reset its records) or cannot serve its schema: here that would reload the other four panels
  // too, so the panel starts a new client instead, or says what is wrong.
  const connect = () => {
    const zero = new Zero({
      server: zeroCache.server,
      schema,
      userID: 'playground',
      kvStore: 'mem',
      onClientStateNotFound: () => restart('zero-cache reset its client records'),
      // A schema this client cannot sync: a new client would get the same answer. Say so; a reload picks up a new build.
      onUpdateNeeded: (reason) => status(`zero-cache: this page's schema is out of date (${reason.type}); reload to update`, 'bad'),
    })
    zero.materialize(zero.query.todos.orderBy('id', 'asc')).addListener((rows) => render(rows as readonly Todo[]))
    z = zero
  }
  const restart = (why: string) => {
    status(`zero-cache: ${why}; reconnecting with a new client`)
    const old = z
    z = undefined
    void old?.close()
    connect()
    status(`zero-cache: reconnected (${why})`, 'ok')
  }
  connect()
  input.disabled = add.disabled = false
  status(`zero-cache: ready in ${readyMs} ms, ${resumed ? 'replica kept from the last visit' : 'first sync'}`, 'ok')
  return zeroCache
}
