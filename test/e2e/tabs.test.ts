// Every tab uses the database, in every engine (test/e2e/tabs/page.ts): three
// tabs of one browser profile write, two of them also stream a slot each,
// while the tab that holds the data (the leader) is closed, reloaded or has
// its worker killed TAKEOVERS times (default 20 in Chromium, 8 in
// the others, which CI runs too), at seeded random points
// (TABS_SEED). Afterwards every acknowledged write is in the database, no
// consumer saw a transaction twice, and both streams caught up and equal the
// database. Waits are on the pages' progress, never on timers.

import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { enginesToTest, launch, waitForFunction, type EngineName, type Session, type Tab } from '../support/browsers'
import { seeded } from '../support/seeded'

const takeoversIn = (engine: EngineName) => Number(process.env.TAKEOVERS ?? (engine === 'chromium' ? 20 : 8))
const SEED = Number(process.env.TABS_SEED ?? Math.floor(Math.random() * 2 ** 31))
/** One wait on a loaded 2-core machine: a takeover is a PGlite boot plus an IndexedDB load. */
const WAIT_MS = 120_000
const ROLES = [
  { role: 'p1', stream: true },
  { role: 'p2', stream: true },
  { role: 'p3', stream: false },
]

interface Progress {
  acked: number
  replica: number
  commits: number
  violations: string[]
  takeovers: number[]
}
type TabsApi = {
  setup(roles: string[]): Promise<void>
  start(): void
  stop(): Promise<void>
  leads(): boolean
  progress(): Progress
  primary(): Promise<string[]>
  replica(): string[]
  kill(): void
  events(): string[]
}
declare const tabs: TabsApi

let site: BuiltSite

beforeAll(async () => {
  site = await serveBuiltSite({
    root: fileURLToPath(new URL('./tabs/', import.meta.url)),
    configFile: false,
    optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
    worker: { format: 'es' },
    build: { target: 'es2022', rollupOptions: { onwarn: () => {} } },
  })
}, WAIT_MS)

afterAll(() => site?.close())

const fail = (what: string, e: unknown) => new Error(`TABS_SEED=${SEED}: ${what}: ${e}`)

/** The page's API, once it has opened the database (a reloaded page is opening it). */
const ready = (tab: Tab, what: string) => waitForFunction(tab, () => 'tabs' in window, undefined, { timeout: WAIT_MS, what })

async function open(session: Session, role: string, stream: boolean): Promise<Tab> {
  const tab = await session.newTab()
  await tab.goto(`${site.url}?role=${role}&stream=${stream ? 1 : 0}`)
  await ready(tab, `tab ${role} to open the database`)
  return tab
}

async function progress(tab: Tab): Promise<Progress> {
  await ready(tab, 'the page to open the database')
  return tab.evaluate(() => tabs.progress(), undefined)
}

/** Waits until `tab`'s progress satisfies `pred` (a violation fails at once). */
async function until(tab: Tab, what: string, pred: string): Promise<Progress> {
  await waitForFunction(
    tab,
    (p: string) => {
      const s = (window as unknown as { tabs?: TabsApi }).tabs?.progress()
      return s && (s.violations.length > 0 || new Function('s', `return ${p}`)(s))
    },
    pred,
    { timeout: WAIT_MS, what },
  ).catch((e) => {
    throw fail(`waiting for ${what}`, e)
  })
  const p = await progress(tab)
  if (p.violations.length) throw fail('violation', p.violations.join('\n'))
  return p
}

/** The tab whose worker holds the data, once one does (none during a takeover). */
async function leader(tabsByRole: Map<string, Tab>): Promise<[string, Tab]> {
  return Promise.any(
    [...tabsByRole].map(([role, tab]) =>
      waitForFunction(tab, () => (window as unknown as { tabs?: TabsApi }).tabs?.leads(), undefined, { timeout: WAIT_MS, what: 'a leader' }).then(
        () => [role, tab] as [string, Tab],
      ),
    ),
  ).catch((e) => {
    throw fail('waiting for a leader', e)
  })
}

/** Each page's timeline of links and streams, for a failure's message. */
async function timelines(tabsByRole: Map<string, Tab>): Promise<string> {
  const out: string[] = []
  for (const [role, tab] of tabsByRole) {
    const events = await tab.evaluate(() => (window as unknown as { tabs?: TabsApi }).tabs?.events() ?? ['(opening)'], undefined).catch((e) => [String(e)])
    out.push(`${role}:`, ...events.slice(-40).map((e) => `  ${e}`))
  }
  return out.join('\n')
}

/** What each page recorded of its own uncaught errors (./browsers/page-record.js). */
async function pageErrors(tabsByRole: Map<string, Tab>): Promise<string[]> {
  const out: string[] = []
  for (const [role, tab] of tabsByRole)
    for (const e of await tab.evaluate(() => (window as unknown as { __pageErrors?: string[] }).__pageErrors ?? [], undefined)) out.push(`${role}: ${e}`)
  return out
}

describe.each(enginesToTest())('%s', (engine) => {
  const TAKEOVERS = takeoversIn(engine)
  let session: Session

  beforeAll(async () => {
    session = await launch(engine)
  }, WAIT_MS)

  afterAll(() => session?.close())

  // Chromium only yet (issue #37 stays open for the others):
  // - WebKitGTK 2.50 can replace the origin's SharedWorker (the tabs' broker, src/worker/broker.ts) while tabs
  //   still hold ports to the old one, which then reach nothing, and a joining tab waits for ever
  //   (TABS_SEED=1382190425).
  // - Firefox ESR 153: a consumer's stream ended after a takeover with an internal TypeError ("can't access
  //   property 0, r[0] is undefined") instead of 08006, and one join waited 120 s (TABS_SEED=1760508549).
  // test/browser/tabs.test.ts runs in every engine.
  it.skipIf(engine !== 'chromium')(`three tabs write and two stream while the leader is closed, reloaded or killed ${TAKEOVERS} times`, async () => {
    const rng = seeded(SEED)
    const pages = new Map<string, Tab>()
    onTestFailed(async () => console.error(`TABS_SEED=${SEED} (${engine}): each tab's timeline\n${await timelines(pages)}`))
    for (const { role, stream } of ROLES) pages.set(role, await open(session, role, stream))
    await pages.get('p1')!.evaluate((roles: string[]) => tabs.setup(roles), ROLES.filter((r) => r.stream).map((r) => r.role))
    await pages.get('p1')!.evaluate(() => localStorage.setItem('tabs-e2e-started', '1'), undefined)
    for (const page of pages.values()) await page.evaluate(() => tabs.start(), undefined)

    const done = { close: 0, reload: 0, kill: 0 }
    const takeovers: number[] = []
    for (let i = 0; i < TAKEOVERS; i++) {
      // A random point: after some more acknowledged writes by a random tab.
      const writer = ROLES[Math.floor(rng() * ROLES.length)].role
      const page = pages.get(writer)!
      const base = (await progress(page)).acked
      await until(page, `round ${i + 1}: ${writer} writing`, `s.acked >= ${base + 1 + Math.floor(rng() * 8)}`)
      const [role, lead] = await leader(pages)
      const action = (['close', 'reload', 'kill'] as const)[Math.floor(rng() * 3)]
      done[action]++
      if (action !== 'close') takeovers.push(...(await progress(lead)).takeovers)
      if (action === 'kill') await lead.evaluate(() => tabs.kill(), undefined)
      else if (action === 'reload') await lead.reload()
      else {
        await lead.close()
        const { stream } = ROLES.find((r) => r.role === role)!
        pages.set(role, await open(session, role, stream))
      }
    }

    // Everything written, everything streamed: stop the writers, then compare.
    for (const [role, page] of pages) {
      await until(page, `${role} writing after the last takeover`, `s.acked > 0`)
      await page.evaluate(() => tabs.stop(), undefined)
    }
    const primary = await pages.get('p3')!.evaluate(() => tabs.primary(), undefined)
    const rows = new Set(primary)
    for (const [role, page] of pages) {
      const p = await progress(page)
      const missing = Array.from({ length: p.acked }, (_, i) => `${role}:${i + 1}`).filter((id) => !rows.has(id))
      expect(missing, `TABS_SEED=${SEED}: acknowledged writes of ${role} missing`).toEqual([])
      takeovers.push(...p.takeovers)
    }
    for (const { role } of ROLES.filter((r) => r.stream)) {
      const page = pages.get(role)!
      await until(page, `${role}'s stream to catch up`, `s.replica >= ${primary.length}`)
      expect(await page.evaluate(() => tabs.replica(), undefined), `TABS_SEED=${SEED}: ${role}'s copy`).toEqual(primary)
    }
    const sorted = takeovers.sort((a, b) => a - b)
    console.log(
      `TABS_SEED=${SEED}: ${TAKEOVERS} takeovers (${done.close} closed, ${done.reload} reloaded, ${done.kill} killed); ` +
        `${primary.length} rows; takeover seen by a tab: p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms`,
    )
    const errors = await pageErrors(pages)
    if (errors.length) console.warn(`TABS_SEED=${SEED}: the pages recorded:\n${errors.join('\n')}`)
  }, 900_000)
})
