// The tabs test's page (test/e2e/tabs.test.ts): several of these, in one
// browser context, share one database. Each writes rows of its own, one
// transaction each; `?stream=1` pages also consume a slot of their own,
// applying to a copy and acknowledging each commit once it is saved. The
// driver closes, reloads or kills whichever tab leads; this page checks as it
// goes that no transaction reached it twice, and the driver compares at the end.
// A page's state lives in localStorage (synchronous, written before a write
// counts as acknowledged and before a commit is acknowledged to the slot), so
// a reloaded page goes on from where it was, as a durable client would.

import { formatLsn, openDatabase, parseLsn, PgError, type Database } from '../../../src/client'

const NAME = 'tabs-e2e'
const params = new URLSearchParams(location.search)
const ROLE = params.get('role') ?? 'p'
const STREAMS = params.get('stream') === '1'
const SLOT = `s_${ROLE}`
const OPTIONS = { proto_version: '1', publication_names: 'p' }

interface State {
  /** The next row this page writes, and the highest it had acknowledged. */
  nextSeq: number
  acked: number
  /** The consumer: ids applied, the end LSN of the last transaction applied. */
  replica: string[]
  lastEnd: string
  commits: number
  violations: string[]
}

const KEY = `tabs-e2e-${ROLE}`
const state: State = JSON.parse(localStorage.getItem(KEY) ?? 'null') ?? { nextSeq: 1, acked: 0, replica: [], lastEnd: '0/0', commits: 0, violations: [] }
const save = () => localStorage.setItem(KEY, JSON.stringify(state))
const replica = new Set(state.replica)
const violation = (s: string) => {
  state.violations.push(`${ROLE}: ${s}`)
  save()
}
/** How long each takeover this page saw took (ms), from losing its leader to reaching the next. */
const takeovers: number[] = []
/** What happened to this page's link and stream, timed (printed when the test fails). */
const events: string[] = []
const note = (what: string) => void events.push(`${(performance.now() / 1000).toFixed(2)}s ${document.visibilityState} ${what}`)
for (const type of ['pagehide', 'pageshow', 'freeze', 'resume', 'visibilitychange'])
  addEventListener(type, (e) => note(`${type}${(e as PageTransitionEvent).persisted ? ' (persisted)' : ''}`))
let running = false
let writing: Promise<void> | null = null
let reads = 0

const db: Database = await openDatabase(NAME, {
  onLeaderChange: (e) => {
    note(e.type === 'linked' ? `linked to ${e.local ? 'its own worker' : 'another tab'} after ${e.ms.toFixed(0)} ms` : e.type)
    if (e.type === 'linked' && e.ms > 0) takeovers.push(e.ms)
  },
})

async function writer(): Promise<void> {
  while (running) {
    const seq = state.nextSeq
    try {
      // A retry after 08006 may find the row there: the call may have committed before its leader went.
      await db.query('INSERT INTO w VALUES ($1) ON CONFLICT DO NOTHING', [`${ROLE}:${seq}`])
    } catch (e) {
      if (e instanceof PgError && e.code === '08006') continue
      violation(`write ${seq}: ${e}`)
      return
    }
    state.acked = seq
    state.nextSeq = seq + 1
    save()
  }
}

async function consume(): Promise<void> {
  for (;;) {
    let stream
    try {
      stream = await db.startReplication({ slot: SLOT, startLsn: state.lastEnd, options: OPTIONS })
      note(`streaming from ${state.lastEnd}`)
    } catch (e) {
      // 55006: the slot's stream of this page before a reload is still ending in the leader; 08006: its leader went.
      if (e instanceof PgError && (e.code === '55006' || e.code === '08006')) {
        note(`start: ${e.code} ${e.message}`)
        await new Promise((r) => setTimeout(r, 50)) // a consumer's reconnect backoff
        continue
      }
      violation(`start: ${e}`)
      return
    }
    let pending: string[] = []
    try {
      for await (const m of stream.messages()) {
        if (m.kind !== 'xlog') continue
        const t = m.message
        if (t.tag === 'B') pending = []
        else if (t.tag === 'I' && t.new.columns[0].kind === 't') pending.push(t.new.columns[0].value)
        else if (t.tag === 'C') {
          const end = t.endLsn
          if (end <= parseLsn(state.lastEnd)!) {
            violation(`transaction ending at ${formatLsn(end)} delivered again (applied up to ${state.lastEnd})`)
            continue
          }
          for (const id of pending) {
            if (replica.has(id)) violation(`row ${id} delivered twice`)
            replica.add(id)
          }
          state.replica = [...replica]
          state.lastEnd = formatLsn(end)
          state.commits++
          save()
          stream.ack(end)
        }
      }
    } catch (e) {
      note(`stream ended: ${e}`)
      if (!(e instanceof PgError && e.code === '08006')) violation(`stream: ${e}`)
    }
  }
}

const api = {
  /** Once, from the first page: the table, the publication, every page's slot. */
  async setup(roles: string[]): Promise<void> {
    await db.exec(`CREATE TABLE w (id text PRIMARY KEY); CREATE PUBLICATION p FOR TABLE w`)
    for (const r of roles) await db.createSlot(`s_${r}`)
  },
  start(): void {
    if (running) return
    running = true
    writing = writer()
    if (STREAMS) void consume()
  },
  async stop(): Promise<void> {
    running = false
    await writing
  },
  leads: () => db.leads,
  progress: () => ({ acked: state.acked, replica: replica.size, commits: state.commits, violations: state.violations, takeovers, reads }),
  events: () => events,
  async primary(): Promise<string[]> {
    reads++
    for (;;) {
      try {
        return (await db.query<{ id: string }>('SELECT id FROM w ORDER BY id')).rows.map((r) => r.id)
      } catch (e) {
        if (!(e instanceof PgError && e.code === '08006')) throw e
      }
    }
  },
  replica: () => [...replica].sort(),
  kill: () => db.killWorker(),
}
;(window as unknown as { tabs: typeof api }).tabs = api
// A page that was running before it was reloaded (or closed and opened again) goes on.
if (localStorage.getItem('tabs-e2e-started') === '1') api.start()
