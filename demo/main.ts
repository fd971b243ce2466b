// The playground page: opens the primary (tabgres on IndexedDB), starts the
// in-memory replica in its own worker, and wires the five panels together.
//
// Start-up order matters for the replica: its slot exists before the copy is
// taken, and the copy records the WAL position it is consistent with, so the
// stream it then starts from that position neither misses nor repeats a
// commit (see snapshot.ts).
//
// Nothing turns green before the database has answered: the boot progress
// folds away, the primary's pill says how long the open took and the offline
// pill says "ready" only once the todo list has been read from PostgreSQL.

import * as Comlink from 'comlink'
import { openDatabase, PgError, type Database, type LinkEvent } from '../src/client'
import { BootProgressView } from './boot-progress'
import { SqlConsole } from './console'
import { byId, h } from './dom'
import { Inspector } from './inspector'
import { enableOffline } from './offline'
import { ReplicaPanel } from './replica-panel'
import type { ReplicaApi } from './replica-worker'
import { takeSnapshot } from './snapshot'
import { TODOS_SQL, TodoApp } from './todos'
import { DEFAULT_DB, playgroundDb, playgroundUrl } from './databases'
import { enableExport, enableImport, takeImported } from './transfer'

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

/** A ?db= the page would not make: main() fails with it rather than open another database. */
let badName: unknown = null
/** tabgres-demo, or the database an Import made (?db=). */
const DB_NAME = (() => {
  try {
    return playgroundDb()
  } catch (e) {
    badName = e
    return DEFAULT_DB
  }
})()
const PUBLICATION = 'demo'
const INSPECTOR_SLOT = 'demo_inspector'
const REPLICA_SLOT = 'demo_replica'
const PGOUTPUT = { proto_version: '1', publication_names: PUBLICATION, messages: 'true' }

const pills = new Map<string, HTMLElement>()
function status(key: string, text: string, state: 'busy' | 'ok' | 'bad' = 'busy'): HTMLElement {
  let el = pills.get(key)
  if (!el) {
    el = h('div', { class: 'pill', 'data-testid': `status-${key}` })
    pills.set(key, el)
    byId('status').append(el)
  }
  el.className = `pill ${state === 'busy' ? '' : state}`
  el.textContent = text
  return el
}

/** 'info' for news that needs no fixing (another tab has the database), 'error' for failures. */
function showBanner(text: string, kind: 'info' | 'error'): void {
  const banner = byId('banner')
  banner.hidden = false
  banner.className = `banner ${kind}`
  banner.setAttribute('role', kind === 'error' ? 'alert' : 'status')
  banner.textContent = text
}

function showError(e: unknown): void {
  showBanner(e instanceof PgError ? `${e.code}: ${e.message}${e.detail ? ` (${e.detail})` : ''}` : String(e), 'error')
}

/**
 * The primary's pill: how long this tab's worker took to open the data, or
 * that another tab's worker holds it and this tab uses it there (every tab
 * works; one worker holds the data). The times ride along as data-* for tests.
 */
function showOpened(db: Database): void {
  const boot = db.boot
  const pill = status('primary', '', 'ok')
  if (db.leads) {
    const openMs = Math.round(boot.ms - (boot.phases.lock ?? 0))
    pill.textContent = `primary: idb://${DB_NAME}, ${boot.created ? 'created' : 'reopened'} in ${openMs} ms in this tab`
    pill.dataset.openMs = String(openMs)
  } else {
    pill.textContent = `primary: idb://${DB_NAME}, held by another tab's worker (this tab uses it there)`
  }
  pill.dataset.leads = String(db.leads)
}

/**
 * While the tab holding the database goes away (closed, reloaded, crashed), a
 * banner says so; the next tab's worker opens the data, calls made meanwhile
 * wait for it, and the banner goes.
 */
function onLeaderChange(e: LinkEvent, db: () => Database | null): void {
  if (e.type === 'lost') {
    showBanner(`The tab holding ${DB_NAME} went away; a tab's worker is taking the database over…`, 'info')
    status('primary', `primary: idb://${DB_NAME}, being taken over…`)
    return
  }
  if (e.ms === 0) return // the first link: not a takeover
  byId('banner').hidden = true
  const d = db()
  if (d) showOpened(d)
  const pill = pills.get('primary')!
  pill.textContent += ` · taken over in ${Math.round(e.ms)} ms`
  pill.dataset.takeoverMs = String(Math.round(e.ms))
}

/**
 * The inspector's and the replica's slots, one set per open tab: each tab
 * streams on its own, and a slot streams to one consumer at a time. A tab
 * takes the lowest free set (a Web Lock per set, held while it lives), so a
 * reloaded tab gets its set back and the slots never outnumber the tabs open at once.
 */
async function slotSet(): Promise<{ inspector: string; replica: string }> {
  for (let k = 0; ; k++) {
    const held = await new Promise<boolean>((resolve) => {
      void navigator.locks.request(`${DB_NAME}:slots:${k}`, { ifAvailable: true }, (lock) => {
        resolve(lock !== null)
        return lock ? new Promise<void>(() => {}) : undefined
      })
    })
    if (held) return k === 0 ? { inspector: INSPECTOR_SLOT, replica: REPLICA_SLOT } : { inspector: `${INSPECTOR_SLOT}_${k}`, replica: `${REPLICA_SLOT}_${k}` }
  }
}

/**
 * START_REPLICATION, waiting out 55006: the slot may still stream to this
 * tab's page before a reload until the worker holding the data notices that
 * page is gone (its Web Lock, a moment). Bounded, as a consumer's reconnect.
 */
async function startStreaming<T>(start: () => Promise<T>): Promise<T> {
  const until = performance.now() + 10_000
  for (;;) {
    try {
      return await start()
    } catch (e) {
      if (!(e instanceof PgError && e.code === '55006') || performance.now() > until) throw e
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

/** CREATE_REPLICATION_SLOT, unless the slot survived from an earlier visit. */
async function ensureSlot(db: Database, name: string): Promise<void> {
  try {
    await db.createSlot(name)
  } catch (e) {
    if (!(e instanceof PgError && e.code === '42710')) throw e // duplicate_object: it exists
  }
}

async function ensureSchema(db: Database): Promise<void> {
  await db.exec(TODOS_SQL)
  const { rows } = await db.query('SELECT 1 FROM pg_publication WHERE pubname = $1', [PUBLICATION])
  if (!rows.length) await db.exec(`CREATE PUBLICATION ${PUBLICATION} FOR ALL TABLES`)
}

const progress = new BootProgressView(byId('boot'))

/** Opens the primary and reads the todo list from it: once this resolves, the database has answered. */
async function firstAnswer(): Promise<{ db: Database; app: TodoApp }> {
  let opened: Database | null = null
  const db = await openDatabase(DB_NAME, { onProgress: progress.onProgress, onLeaderChange: (e) => onLeaderChange(e, () => opened) })
  opened = db
  status('primary', `primary: idb://${DB_NAME} open, first query…`)
  progress.step('schema')
  await ensureSchema(db)
  progress.step('todos')
  const app = new TodoApp(db, byId('app'), showError)
  await app.refresh()
  // Only now may anything say ready; the offline pill waits for this promise.
  showOpened(db)
  progress.done(db.leads ? `PostgreSQL answered: idb://${DB_NAME} ${db.boot.created ? 'created' : 'reopened'}` : `PostgreSQL answered from another tab's worker`)
  return { db, app }
}

/** On an imported database: which one, the way back, and (once) what the Import did. */
function showDatabase(): void {
  const imported = takeImported(DB_NAME)
  if (DB_NAME === DEFAULT_DB) return
  const note = byId('db-note')
  note.hidden = false
  note.replaceChildren('imported database ', h('code', {}, DB_NAME), ' · ', h('a', { href: playgroundUrl(DEFAULT_DB), 'data-testid': 'db-back' }, `back to ${DEFAULT_DB}`))
  if (!imported) return
  showBanner(
    imported.outcome === 'loaded'
      ? `Loaded ${imported.file} into idb://${DB_NAME}, a database of its own; idb://${imported.from} is as it was (the link in the header goes back).`
      : `${imported.file} was imported before: this is idb://${DB_NAME} as it is now, not loaded again.`,
    'info',
  )
}

async function main(): Promise<void> {
  if (badName) throw badName
  showDatabase()
  status('primary', `primary: opening idb://${DB_NAME}…`)
  const answered = firstAnswer()
  void enableOffline((text, ready) => {
    byId('offline').textContent = `· ${text}`
    status('offline', text, ready ? 'ok' : 'busy')
  }, answered)

  const replicaWorker = new Worker(new URL('./replica-worker.ts', import.meta.url), { type: 'module', name: 'tabgres-demo-replica' })
  const replica = Comlink.wrap<ReplicaApi>(replicaWorker)
  status('replica', 'replica: starting PGlite in memory…')
  const replicaBoot = replica.boot()

  const { db, app } = await answered
  // A statement from the console may change what the panels show without a
  // commit the stream carries (DROP TABLE, ALTER PUBLICATION): refresh them too.
  let panel: ReplicaPanel | null = null
  new SqlConsole(db, byId('console'), () => {
    void app.refresh()
    void panel?.refresh().catch(showError)
  })
  enableExport(db, showError)
  enableImport(db, showError)
  const slots = await slotSet()
  // This tab's own slots (a second tab streams its own set): the panels name them.
  document.querySelector('[data-testid="inspector-slot"]')!.textContent = slots.inspector
  document.querySelector('[data-testid="replica-slot"]')!.textContent = slots.replica
  await ensureSlot(db, slots.inspector)
  await ensureSlot(db, slots.replica)

  const inspector = new Inspector(byId('inspector'), byId('counters'))
  panel = new ReplicaPanel(db, replica, PUBLICATION, byId('checksums'))

  // The inspector watches from now on: start at the current position.
  const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
  const stream = await startStreaming(() => db.startReplication({ slot: slots.inspector, startLsn: lsn, options: PGOUTPUT }))
  inspector.onCommit = () => {
    void app.refresh()
    void panel?.refresh().catch(showError)
  }
  inspector.run(stream).catch(showError)

  const bootMs = await replicaBoot
  const snapshot = await takeSnapshot(db, PUBLICATION)
  const port = await startStreaming(() => db.replicationPort({ slot: slots.replica, startLsn: snapshot.lsn, options: PGOUTPUT }))
  const rows = snapshot.tables.reduce((n, t) => n + t.rows.length, 0)
  status('replica', `replica: booted in ${Math.round(bootMs)} ms, copied ${plural(rows, 'row')} at ${snapshot.lsn}`, 'ok')
  await replica.start(
    Comlink.transfer(port, [port]),
    snapshot,
    Comlink.proxy((s: { applied: string; transactions: number; error?: string }) => {
      byId('replica-state').textContent = s.error
        ? `replica stopped: ${s.error}`
        : `applied and acknowledged up to ${s.applied} · ${plural(s.transactions, 'transaction')} since the copy`
      if (s.error) status('replica', `replica: ${s.error}`, 'bad')
      void panel?.refresh().catch(showError)
    }),
  )
  await panel.refresh()
  document.body.dataset.ready = 'true' // tests wait for this

  // Last, so its first sync never delays the rest: zero-cache in this tab, and a Zero client on it.
  status('zero', 'zero-cache: loading…')
  const { startZeroPanel } = await import('./zero-panel')
  await startZeroPanel({ primary: db, name: DB_NAME, root: byId('zero'), status: (text, state) => status('zero', text, state), onError: showError })
  document.body.dataset.zeroReady = 'true'
}

main().catch((e) => {
  progress.failed()
  showError(e)
  status('primary', 'primary: failed to start', 'bad')
})
