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
import { openDatabase, PgError, type BootInfo, type Database } from '../src/client'
import { BootProgressView } from './boot-progress'
import { SqlConsole } from './console'
import { byId, h } from './dom'
import { Inspector } from './inspector'
import { enableOffline } from './offline'
import { ReplicaPanel } from './replica-panel'
import type { ReplicaApi } from './replica-worker'
import { takeSnapshot } from './snapshot'
import { TODOS_SQL, TodoApp } from './todos'

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`

const DB_NAME = 'tabgres-demo'
const PUBLICATION = 'demo'
const INSPECTOR_SLOT = 'demo_inspector'
const REPLICA_SLOT = 'demo_replica'
const PGOUTPUT = { proto_version: '1', publication_names: PUBLICATION, messages: 'true' }

const pills = new Map<string, HTMLElement>()
function status(key: string, text: string, state: 'busy' | 'ok' | 'bad' = 'busy'): void {
  let el = pills.get(key)
  if (!el) {
    el = h('div', { class: 'pill', 'data-testid': `status-${key}` })
    pills.set(key, el)
    byId('status').append(el)
  }
  el.className = `pill ${state === 'busy' ? '' : state}`
  el.textContent = text
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
 * The primary's pill once it answered: how long the open took, not counting
 * a wait for another tab to let go of the name (the 'lock' phase), which is
 * the other tab's doing, not the boot's. The times ride along as data-* for tests.
 */
function showOpened(boot: BootInfo, waitedForTab: boolean): void {
  const waitMs = boot.phases.lock ?? 0
  const openMs = Math.round(boot.ms - waitMs)
  const wait = waitedForTab ? ` (+${(waitMs / 1000).toFixed(1)} s waiting for the other tab)` : ''
  status('primary', `primary: idb://${DB_NAME}, ${boot.created ? 'created' : 'reopened'} in ${openMs} ms${wait}`, 'ok')
  const pill = pills.get('primary')!
  pill.dataset.openMs = String(openMs)
  pill.dataset.waitMs = String(Math.round(waitMs))
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

/**
 * One tab owns the database (a Web Lock per name). A second tab says so and
 * waits: it opens the database as soon as the first tab closes or reloads.
 */
async function openPrimary(progress: BootProgressView): Promise<{ db: Database; waitedForTab: boolean }> {
  const { onProgress } = progress
  try {
    return { db: await openDatabase(DB_NAME, { onProgress }), waitedForTab: false }
  } catch (e) {
    if (!(e instanceof PgError && e.code === '55006')) throw e // object_in_use: another tab has it
    status('primary', `primary: open in another tab; waiting for it to close…`)
    progress.relabel('lock', 'waiting for the other tab to close the database (its name lock)')
    showBanner(
      `The database ${DB_NAME} is open in another tab (one tab owns it at a time). This tab opens it as soon as that tab is closed or reloaded.`,
      'info',
    )
    const db = await openDatabase(DB_NAME, { onLocked: 'wait', onProgress })
    byId('banner').hidden = true
    return { db, waitedForTab: true }
  }
}

const progress = new BootProgressView(byId('boot'))

/** Opens the primary and reads the todo list from it: once this resolves, the database has answered. */
async function firstAnswer(): Promise<{ db: Database; app: TodoApp }> {
  const { db, waitedForTab } = await openPrimary(progress)
  status('primary', `primary: idb://${DB_NAME} open, first query…`)
  progress.step('schema')
  await ensureSchema(db)
  progress.step('todos')
  const app = new TodoApp(db, byId('app'), showError)
  await app.refresh()
  // Only now may anything say ready; the offline pill waits for this promise.
  showOpened(db.boot, waitedForTab)
  progress.done(`PostgreSQL answered: idb://${DB_NAME} ${db.boot.created ? 'created' : 'reopened'}`)
  return { db, app }
}

async function main(): Promise<void> {
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
  new SqlConsole(db, byId('console'), () => void app.refresh())
  await ensureSlot(db, INSPECTOR_SLOT)
  await ensureSlot(db, REPLICA_SLOT)

  const inspector = new Inspector(byId('inspector'), byId('counters'))
  const panel = new ReplicaPanel(db, replica, PUBLICATION, byId('checksums'))

  // The inspector watches from now on: start at the current position.
  const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
  const stream = await db.startReplication({ slot: INSPECTOR_SLOT, startLsn: lsn, options: PGOUTPUT })
  inspector.onCommit = () => {
    void app.refresh()
    void panel.refresh()
  }
  inspector.run(stream).catch(showError)

  const bootMs = await replicaBoot
  const snapshot = await takeSnapshot(db, PUBLICATION)
  const port = await db.replicationPort({ slot: REPLICA_SLOT, startLsn: snapshot.lsn, options: PGOUTPUT })
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
      void panel.refresh()
    }),
  )
  await panel.refresh()
  document.body.dataset.ready = 'true' // tests wait for this

  // Last, so its first sync never delays the rest: zero-cache in this tab, and a Zero client on it.
  status('zero', 'zero-cache: loading…')
  const { startZeroPanel } = await import('./zero-panel')
  await startZeroPanel({ primary: db, root: byId('zero'), status: (text, state) => status('zero', text, state), onError: showError })
  document.body.dataset.zeroReady = 'true'
}

main().catch((e) => {
  progress.failed()
  showError(e)
  status('primary', 'primary: failed to start', 'bad')
})
