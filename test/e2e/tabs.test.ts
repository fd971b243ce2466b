// Every tab uses the database, in Chromium (test/e2e/tabs/page.ts): three
// tabs of one browser context write, two of them also stream a slot each,
// while the tab that holds the data (the leader) is closed, reloaded or has
// its worker killed TAKEOVERS times (default 20), at seeded random points
// (TABS_SEED). Afterwards every acknowledged write is in the database, no
// consumer saw a transaction twice, and both streams caught up and equal the
// database. Waits are on the pages' progress, never on timers.

import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { seeded } from '../support/seeded'

const TAKEOVERS = Number(process.env.TAKEOVERS ?? 20)
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

async function open(context: BrowserContext, role: string, stream: boolean): Promise<Page> {
  const page = await context.newPage()
  page.on('pageerror', (e) => console.error(`tab ${role} error:`, e))
  await page.goto(`${site.url}?role=${role}&stream=${stream ? 1 : 0}`)
  await page.waitForFunction(() => 'tabs' in window, null, { timeout: WAIT_MS })
  return page
}

/** A page's progress, once it has opened the database (a reloaded page is opening it). */
async function progress(page: Page): Promise<Progress> {
  await page.waitForFunction(() => 'tabs' in window, null, { timeout: WAIT_MS, polling: 20 })
  return page.evaluate(() => tabs.progress())
}

/** Waits until `page`'s progress satisfies `pred` (a violation fails at once). */
async function until(page: Page, what: string, pred: string): Promise<Progress> {
  await page
    .waitForFunction(
      (p) => {
        const s = (window as unknown as { tabs?: TabsApi }).tabs?.progress()
        return s && (s.violations.length > 0 || new Function('s', `return ${p}`)(s))
      },
      pred,
      { timeout: WAIT_MS, polling: 20 },
    )
    .catch((e) => {
      throw fail(`waiting for ${what}`, e)
    })
  const p = await progress(page)
  if (p.violations.length) throw fail('violation', p.violations.join('\n'))
  return p
}

/** The page whose worker holds the data, once one does (none during a takeover). */
async function leader(pages: Map<string, Page>): Promise<[string, Page]> {
  const entries = [...pages]
  const found = await Promise.any(
    entries.map(([role, page]) =>
      page
        .waitForFunction(() => (window as unknown as { tabs?: TabsApi }).tabs?.leads(), null, { timeout: WAIT_MS, polling: 20 })
        .then(() => [role, page] as [string, Page]),
    ),
  ).catch((e) => {
    throw fail('waiting for a leader', e)
  })
  return found
}

it(`three tabs write and two stream while the leader is closed, reloaded or killed ${TAKEOVERS} times`, async () => {
  const rng = seeded(SEED)
  const context = await site.browser.newContext()
  const pages = new Map<string, Page>()
  for (const { role, stream } of ROLES) pages.set(role, await open(context, role, stream))
  await pages.get('p1')!.evaluate((roles) => tabs.setup(roles), ROLES.filter((r) => r.stream).map((r) => r.role))
  await pages.get('p1')!.evaluate(() => localStorage.setItem('tabs-e2e-started', '1'))
  for (const page of pages.values()) await page.evaluate(() => tabs.start())

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
    if (action === 'kill') await lead.evaluate(() => tabs.kill())
    else if (action === 'reload') await lead.reload()
    else {
      await lead.close()
      const { stream } = ROLES.find((r) => r.role === role)!
      pages.set(role, await open(context, role, stream))
    }
  }

  // Everything written, everything streamed: stop the writers, then compare.
  for (const [role, page] of pages) {
    await until(page, `${role} writing after the last takeover`, `s.acked > 0`)
    await page.evaluate(() => tabs.stop())
  }
  const primary = await pages.get('p3')!.evaluate(() => tabs.primary())
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
    expect(await page.evaluate(() => tabs.replica()), `TABS_SEED=${SEED}: ${role}'s copy`).toEqual(primary)
  }
  const sorted = takeovers.sort((a, b) => a - b)
  console.log(
    `TABS_SEED=${SEED}: ${TAKEOVERS} takeovers (${done.close} closed, ${done.reload} reloaded, ${done.kill} killed); ` +
      `${primary.length} rows; takeover seen by a tab: p50 ${sorted[Math.floor(sorted.length / 2)]?.toFixed(0)} ms, max ${sorted.at(-1)?.toFixed(0)} ms`,
  )
  await context.close()
}, 600_000)
