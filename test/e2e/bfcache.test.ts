// The back/forward cache, in every engine (test/e2e/bfcache/page.ts): one tab
// opens the database on page a, goes to page b (which must get the database:
// page a, in the cache, let it go), back to a and forward to b. A page
// restored from the cache works again: it writes, reads what the other page
// wrote, and its stream resumes with every row once, in order.
//
// Chromium runs with its back/forward cache on (Playwright turns it off by
// default); its pages and WebKit's must come back from the cache, not load
// again, or the test would prove nothing about it. Firefox (ESR 153) keeps
// no page that holds a Web Lock in its cache (every tabgres page holds one:
// the leader's worker the database's, a follower its holder lock), so it
// loads the page again: then the new page's stream must start after what
// the old one acknowledged.

import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { enginesToTest, launch, waitForFunction, type Session, type Tab } from '../support/browsers'

const WAIT_MS = 120_000

interface State {
  load: number
  ready: boolean
  restored: number
  hidden: number
  received: string[]
  violations: string[]
  phases: string[]
}
type Api = { state(): State; leads(): boolean; write(tag: string): Promise<void>; rows(): Promise<string[]> }
declare const bf: Api

let site: BuiltSite

beforeAll(async () => {
  site = await serveBuiltSite({
    root: fileURLToPath(new URL('./bfcache/', import.meta.url)),
    configFile: false,
    optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
    worker: { format: 'es' },
    build: { target: 'es2022', rollupOptions: { onwarn: () => {} } },
  })
}, WAIT_MS)

afterAll(() => site?.close())

/** The page's state once `pred` holds of it (a violation fails at once). */
async function until(tab: Tab, what: string, pred: string): Promise<State> {
  const s = await waitForFunction(
    tab,
    (p: string) => {
      const w = window as unknown as { bf?: Api }
      const s = w.bf?.state()
      return s && (s.violations.length > 0 || new Function('s', `return ${p}`)(s)) ? s : null
    },
    pred,
    { timeout: WAIT_MS, what },
  )
  expect(s.violations, what).toEqual([])
  return s
}

const page = (p: 'a' | 'b') => `${site.url}?page=${p}`

describe.each(enginesToTest())('%s', (engine) => {
  let session: Session

  beforeAll(async () => {
    session = await launch(engine, { bfcache: true })
  }, WAIT_MS)

  afterAll(() => session?.close())

  it('a page left for the back/forward cache lets the database go, and works again when it comes back, its stream resumed exactly once', async () => {
    const tab = await session.newTab()
    await tab.goto(page('a'))
    await until(tab, 'page a to open the database', 's.ready')
    await tab.evaluate(() => bf.write('a1'), undefined)
    const first = await until(tab, 'page a to stream its write', `s.received.includes('a1')`)

    // Page a goes into the cache with the database open: page b must get it (not wait at 'lock').
    await tab.goto(page('b'))
    const b = await until(tab, 'page b to open the database while page a is in the back/forward cache', 's.ready')
    expect(b.phases).toContain('ready')
    await tab.evaluate(() => bf.write('b1'), undefined)
    const second = await until(tab, 'page b to stream', `s.received.join() === 'a1,b1'`)

    /** Back on a page: restored from the cache (Chromium, WebKit), or loaded again (Firefox). */
    const returned = async (was: State, what: string): Promise<boolean> => {
      const s = await until(tab, what, `s.ready && (s.restored >= 1 || s.load !== ${was.load})`)
      const cached = s.load === was.load
      if (engine !== 'firefox') expect(cached, `${what}: restored from the back/forward cache, not loaded again`).toBe(true)
      if (cached) expect(s.hidden, 'the page entered the cache once').toBe(1)
      return cached
    }

    await tab.back()
    const aCached = await returned(first, 'page a back, answering again')
    await tab.evaluate(() => bf.write('a2'), undefined)
    await expect(tab.evaluate(() => bf.rows(), undefined)).resolves.toEqual(['a1', 'a2', 'b1'])
    // Its stream went on from where it was: what page b wrote meanwhile, then its own, each once.
    await until(tab, `page a's stream to resume`, `s.received.join() === '${aCached ? 'a1,b1,a2' : 'b1,a2'}'`)

    await tab.forward()
    const bCached = await returned(second, 'page b back, answering again')
    await tab.evaluate(() => bf.write('b2'), undefined)
    const want = bCached ? ['a1', 'b1', 'a2', 'b2'] : ['a2', 'b2']
    const last = await until(tab, `page b's stream to resume`, `s.received.join() === '${want.join()}'`)
    expect(last.received).toEqual(want)
  }, 4 * WAIT_MS)
})
