// The playground, built as a static site and driven in every engine
// (Chromium, Firefox, WebKit: test/support/browsers), each a fresh profile:
// an item added in the app reaches the inspector and the replica (checksums
// equal), survives a reload, the page works offline after the first visit,
// and an SQL error shows its SQLSTATE. Each step saves a screenshot under
// test-results/demo/<engine>/ (look at them: would a newcomer understand the page?).
//
// Every wait is on something the page shows (the locators poll the DOM, in
// the page); the page marks itself ready with <body data-ready>.
//
// Boot order (issue #17): an observer injected before any page script runs
// records what the page shows, snapshot by snapshot, so a test can check
// what came before what: the boot progress showed a phase, and the offline
// pill turned "ready" only once the database had answered.

import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { enginesToTest, launch, type Session } from '../support/browsers'
import { Page } from '../support/browsers/page'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { freePort } from '../support/free-port'
import { PG_BIN, startPg15, type Pg15 } from '../support/pg15'

const config = fileURLToPath(new URL('../../demo/vite.config.ts', import.meta.url))
const shotsRoot = fileURLToPath(new URL('../../test-results/demo/', import.meta.url))
/** Booting PGlite twice (primary and replica) on a loaded 2-core machine takes a while. */
const BOOT_MS = 180_000
/** A test that reloads waits for the page, then for zero-cache: each may take up to BOOT_MS on a busy machine. */
const RELOAD_MS = 2 * BOOT_MS

/** What the page showed at one moment (one MutationObserver callback: what could be painted). */
interface Shown {
  t: number
  phase: string | null
  primary: string | null
  offline: string | null
  offlineOk: boolean
  /** Panels still showing what they are waiting for (data-testid="pending"). */
  pending: number
}

/**
 * Runs in the page before its scripts (built-site puts it in every HTML file): keeps
 * window.__shown. No named functions inside: the test's transform would wrap
 * them in a helper (__name) that the page does not have.
 */
function recordShown(): void {
  const shown: Shown[] = []
  ;(window as unknown as { __shown: Shown[] }).__shown = shown
  const observer = new MutationObserver(() => {
    const offline = document.querySelector('[data-testid="status-offline"]')
    const now: Shown = {
      t: performance.now(),
      phase: document.querySelector('[data-testid="boot-progress"]')?.getAttribute('data-phase') ?? null,
      primary: document.querySelector('[data-testid="status-primary"]')?.textContent ?? null,
      offline: offline?.textContent ?? null,
      offlineOk: offline?.classList.contains('ok') ?? false,
      pending: document.querySelectorAll('[data-testid="pending"]').length,
    }
    const last = shown[shown.length - 1]
    if (!last || last.phase !== now.phase || last.primary !== now.primary || last.offline !== now.offline || last.offlineOk !== now.offlineOk) shown.push(now)
    if (now.offlineOk) observer.disconnect() // the boot is over; the panels keep changing
  })
  observer.observe(document, { subtree: true, childList: true, characterData: true, attributes: true })
}

const BOOT_PHASES = ['lock', 'registry', 'pglite', 'install']

/**
 * Once the offline pill is green: the progress showed a boot phase, then
 * folded ('done') once the database answered; the pill said it was waiting
 * for the database and said ready only after the primary's pill said
 * created/reopened. Returns the record.
 */
async function checkBootOrder(p: Page): Promise<Shown[]> {
  await p.locator('[data-testid="status-offline"].ok').waitFor({ timeout: 60_000 })
  const shown = await p.evaluate(() => (window as unknown as { __shown: Shown[] }).__shown)
  const done = shown.findIndex((s) => s.phase === 'done')
  expect(done, JSON.stringify(shown)).toBeGreaterThan(0)
  expect(shown.slice(0, done).some((s) => BOOT_PHASES.includes(s.phase ?? '')), JSON.stringify(shown)).toBe(true)
  const ready = shown.findIndex((s) => s.offlineOk)
  expect(ready).toBeGreaterThanOrEqual(done)
  expect(shown[ready].primary).toMatch(/created|reopened/)
  const sayingReady = /ready to work offline|offline copy cached/
  const early = shown.slice(0, ready).filter((s) => sayingReady.test(s.offline ?? '') || (/created|reopened/.test(s.primary ?? '') && s.phase !== 'done'))
  expect(early).toEqual([])
  expect(shown.some((s) => s.offline === 'offline copy: waiting for the database')).toBe(true)
  return shown
}

let site: BuiltSite
let session: Session
let page: Page
let url: string
let shots: string

/** What a page recorded as uncaught (zero-cache's console errors are printed, not counted). */
const uncaught = async (p: Page) => (await p.errors()).filter((e) => !e.startsWith('console.error'))

async function ready(p: Page): Promise<void> {
  await p.waitForSelector('body[data-ready="true"]', { timeout: BOOT_MS })
}

async function zeroReady(p: Page): Promise<void> {
  await p.waitForSelector('body[data-zero-ready="true"]', { timeout: BOOT_MS }).catch(async (e) => {
    // What the panel said, and what the page recorded: the failure's cause, in every engine.
    const said = await p.getByTestId('status-zero').textContent({ timeout: 5_000 }).catch(() => '?')
    throw new Error(`${e}\nthe Zero pill: ${said}\nthe page recorded:\n${(await p.errors().catch(() => [])).join('\n').slice(0, 6000)}`)
  })
}

/** What the Zero panel's live query shows. */
const zeroTitles = (p: Page) => p.getByTestId('zero-item').locator('.title').allTextContents()

async function shot(name: string): Promise<void> {
  await page.screenshot(join(shots, `${name}.png`))
}

/** The todos row of the checksum table, once both sides agree. */
async function todosInSync(p: Page, rows: number): Promise<void> {
  const row = p.locator('[data-testid="checksum-row"][data-table="public.todos"]')
  await expect.poll(async () => ((await row.count()) ? await row.getAttribute('data-equal') : null), { timeout: 60_000 }).toBe('true')
  await expect.poll(async () => row.locator('[data-testid="checksum-replica"]').textContent(), { timeout: 60_000 }).toMatch(
    new RegExp(`^${rows} rows? · [0-9a-f]{8}$`),
  )
}

async function addTodo(p: Page, title: string): Promise<void> {
  await p.getByTestId('todo-input').fill(title)
  await p.getByTestId('todo-add').click()
  await p.getByTestId('todo-list').getByText(title, { exact: true }).waitFor({ timeout: 60_000 })
}

/**
 * Clicks Export, checks the file's name, and loads the download into
 * PostgreSQL 15's database "imported" with psql -v ON_ERROR_STOP=1 (no
 * output on stderr, exit 0). Returns a psql for that database.
 */
async function exportIntoPg15(p: Page, pg15: Pg15, scratch: string): Promise<(sql: string) => string[]> {
  const download = await p.download(p.getByTestId('export'), { timeout: 60_000 })
  expect(download.name).toMatch(/^tabgres-demo-[0-9-]+\.sql$/)
  const file = join(scratch, 'export.sql')
  writeFileSync(file, download.text)
  const load = spawnSync(join(PG_BIN, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', pg15.url('imported'), '-f', file], { encoding: 'utf8' })
  expect(load.stderr).toBe('')
  expect(load.status).toBe(0)
  return (sql: string) => {
    const r = spawnSync(join(PG_BIN, 'psql'), ['-X', '-qAt', '-d', pg15.url('imported'), '-c', sql], { encoding: 'utf8' })
    expect(r.stderr).toBe('')
    return r.stdout.trimEnd().split('\n')
  }
}

beforeAll(async () => {
  site = await serveBuiltSite({ configFile: config }, { initScripts: [recordShown] })
  url = site.url
}, BOOT_MS)

afterAll(() => site?.close())

// Not yet in WebKit (issue #37 stays open for it): after the offline reload, served by the service worker,
// zero-cache in the tab did not get ready within BOOT_MS in 2 of 3 loaded runs (WebKitGTK 2.50), and the later
// tests then failed after it. The library, crash and bfcache suites run in WebKit.
const NOT_YET: string[] = ['webkit']
describe.each(enginesToTest().filter((e) => !NOT_YET.includes(e)))('playground (built, in %s)', (engine) => {
  beforeAll(async () => {
    shots = join(shotsRoot, engine)
    mkdirSync(shots, { recursive: true })
    session = await launch(engine)
    page = new Page(await session.newTab())
    await page.setViewportSize({ width: 1400, height: 1000 })
  }, BOOT_MS)

  afterAll(async () => {
    // What went wrong in the page, beside a failure: its console's errors (zero-cache's included).
    const errors = await page?.errors().catch(() => [])
    if (errors?.length) console.error(`${engine}: the page recorded:\n${errors.join('\n').slice(0, 8000)}`)
    await session?.close()
  })

  it('builds without a warning', () => {
    // A warning per build would bury the one that matters (PGlite's and Zero's Node-only imports are stubbed: demo/vite.config.ts).
    expect(site.warnings).toEqual([])
  })

  it('an added item shows in the app, in the inspector and in the replica, with equal checksums', async () => {
    // Not waiting for 'load': the boot progress is worth a look while it runs.
    await page.goto(url)
    await page.locator('[data-testid="boot-step"]').first().waitFor({ timeout: BOOT_MS })
    await shot('0-first-visit-booting')
    await ready(page)
    const shown = await checkBootOrder(page)
    // A first visit creates the database: the template is fetched.
    expect(shown.some((s) => s.phase === 'pglite')).toBe(true)
    // While it boots, each of the five panels says what it waits for, rather than stand empty.
    expect(shown.find((s) => BOOT_PHASES.includes(s.phase ?? ''))?.pending).toBe(5)
    await expect(page.getByTestId('pending').count()).resolves.toBeLessThan(5)
    await expect(page.getByTestId('boot-progress').textContent()).resolves.toContain('PostgreSQL answered')
    await todosInSync(page, 0)
    await shot('1-first-load')

    await addTodo(page, 'water the plants')
    const txn = page.getByTestId('inspector-txn').filter({ hasText: "title='water the plants'" })
    await expect.poll(() => txn.count(), { timeout: 60_000 }).toBe(1)
    await expect(txn.first().locator('.tag').filter({ hasText: 'I Insert' }).count()).resolves.toBe(1)
    // The table's Relation came first, its terms (oid, replica identity) explained on hover.
    await expect(txn.first().locator('.msg.tag-R .text').textContent()).resolves.toMatch(/^public\.todos \(oid \d+, replica identity default: /)
    await expect(txn.first().locator('.msg.tag-R .text').getAttribute('title')).resolves.toMatch(/^Relation: .*oid: the table's id in the primary's catalog.*replica identity: /)
    await todosInSync(page, 1)
    // The replica's own rows, next to its checksum.
    await page.locator('[data-testid="checksum-row"][data-table="public.todos"]').getByTestId('checksum-rows').click()
    await expect.poll(() => page.getByTestId('replica-rows').locator('td').allTextContents(), { timeout: 60_000 }).toContain('water the plants')

    // Raw bytes on demand: the Insert message starts with 'I' (0x49). zero-cache, starting now, commits
    // transactions of its own that fold this one: with the pointer on it, it stays as it is; folded already, it opens by hand.
    await txn.first().locator('summary').hover()
    if (!(await txn.first().evaluate((e) => (e as HTMLDetailsElement).open))) await txn.first().locator('summary').click()
    await txn.first().locator('.msg.tag-I .msg-line').click()
    await expect(txn.first().locator('.msg.tag-I pre.hex').textContent()).resolves.toMatch(/^0000 {2}49 /)
    await shot('2-item-added')
  }, BOOT_MS)

  it('the Zero panel: a write there reaches the app, the inspector and the replica; a write in the app reaches it', async () => {
    await zeroReady(page)
    await expect(page.getByTestId('pending').count()).resolves.toBe(0)
    const panel = page.getByTestId('zero')
    await expect(panel.getAttribute('data-resumed')).resolves.toBe('false')
    await expect(page.getByTestId('status-zero').textContent()).resolves.toMatch(/^zero-cache: ready in \d+ ms, first sync$/)
    await expect.poll(() => zeroTitles(page), { timeout: 60_000 }).toEqual(['water the plants'])

    await page.getByTestId('zero-input').fill('through zero')
    await page.getByTestId('zero-add').click()
    await page.getByTestId('todo-list').getByText('through zero', { exact: true }).waitFor({ timeout: 60_000 })
    const txn = page.getByTestId('inspector-txn').filter({ hasText: "title='through zero'" })
    await expect.poll(() => txn.count(), { timeout: 60_000 }).toBe(1)
    await todosInSync(page, 2)
    await shot('2b-zero-write')

    // The other way: the app's UPDATE shows in the live query.
    await page.getByTestId('todo-item').filter({ hasText: 'through zero' }).getByRole('checkbox').check()
    await expect.poll(() => page.getByTestId('zero-item').filter({ hasText: 'through zero' }).getAttribute('class'), { timeout: 60_000 }).toBe('done')
    // And Zero's delete reaches the primary: the later tests count the rows the app wrote.
    await page.getByTestId('zero-item').filter({ hasText: 'through zero' }).getByRole('button', { name: 'delete through zero' }).click()
    await expect.poll(() => page.getByTestId('todo-item').filter({ hasText: 'through zero' }).count(), { timeout: 60_000 }).toBe(0)
    await todosInSync(page, 1)
    await expect(zeroTitles(page)).resolves.toEqual(['water the plants'])
  }, BOOT_MS)

  it('the data is still there after a reload, and the replica copies it again; zero-cache resumes without a resync', async () => {
    const version = await page.getByTestId('zero').getAttribute('data-replica-version')
    expect(version).toMatch(/^[0-9a-z]+$/)
    await page.reload()
    await ready(page)
    await expect(page.getByTestId('todo-item').filter({ hasText: 'water the plants' }).count()).resolves.toBe(1)
    await expect(page.getByTestId('status-primary').textContent()).resolves.toContain('reopened')
    // The service worker is active from the start now: the pill still waits for the database.
    await checkBootOrder(page)
    await todosInSync(page, 1)
    // zero-cache resumes from the replica kept in IndexedDB: the same replica, no full resync.
    await zeroReady(page)
    await expect(page.getByTestId('zero').getAttribute('data-resumed')).resolves.toBe('true')
    await expect(page.getByTestId('zero').getAttribute('data-replica-version')).resolves.toBe(version)
    await expect.poll(() => zeroTitles(page), { timeout: 60_000 }).toEqual(['water the plants'])
    await shot('3-after-reload')
  }, RELOAD_MS)

  it('works offline after the first visit', async () => {
    await page.getByTestId('offline-state').getByText('ready to work offline').waitFor({ timeout: 60_000 })
    // The server drops every connection from now on: what loads comes from the service worker's cache.
    site.setOffline(true)
    try {
      await page.reload()
      await ready(page)
      await expect(page.evaluate(() => navigator.serviceWorker.controller !== null)).resolves.toBe(true)
      await expect(page.getByTestId('todo-item').filter({ hasText: 'water the plants' }).count()).resolves.toBe(1)
      await addTodo(page, 'written offline')
      await todosInSync(page, 2)
      // zero-cache too comes from the cache, and resumes its replica.
      await zeroReady(page)
      await expect(page.getByTestId('zero').getAttribute('data-resumed')).resolves.toBe('true')
      await expect.poll(() => zeroTitles(page), { timeout: 60_000 }).toEqual(['water the plants', 'written offline'])
      await shot('4-offline')
    } finally {
      site.setOffline(false)
    }
  }, RELOAD_MS)

  it('a table created from the console reaches the replica, arrays and jsonb included', async () => {
    await page.getByRole('button', { name: 'a new table' }).click()
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['CREATE TABLE', 'INSERT 0 1'])
    const row = page.locator('[data-testid="checksum-row"][data-table="public.notes"]')
    await expect.poll(async () => ((await row.count()) ? await row.getAttribute('data-equal') : null), { timeout: 60_000 }).toBe('true')
    await expect(row.locator('[data-testid="checksum-replica"]').textContent()).resolves.toMatch(/^1 row · [0-9a-f]{8}$/)
  }, BOOT_MS)

  it('the console shows each statement\'s own command tag, and a running state while a query runs', async () => {
    // What the console showed while the query ran, recorded as it happens (no race with the query's end).
    await page.evaluate(() => {
      const seen: { running: boolean; disabled: boolean }[] = []
      ;(window as unknown as { __console: typeof seen }).__console = seen
      new MutationObserver(() => {
        const running = document.querySelector('[data-testid="sql-running"]') !== null
        const disabled = (document.querySelector('[data-testid="sql-run"]') as HTMLButtonElement).disabled
        if (running) seen.push({ running, disabled })
      }).observe(document.querySelector('[data-testid="sql-output"]')!, { childList: true, subtree: true })
    })
    await page.getByTestId('sql-input').fill(
      "BEGIN;\nINSERT INTO todos (title) VALUES ('tagged');\nUPDATE todos SET done = true WHERE title = 'tagged';\nSELECT count(*) FROM todos WHERE title = 'tagged';\nCOMMIT;",
    )
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['BEGIN', 'INSERT 0 1', 'UPDATE 1', 'SELECT 1', 'COMMIT'])
    await expect(page.getByTestId('sql-run').isEnabled()).resolves.toBe(true)
    expect(await page.evaluate(() => (window as unknown as { __console: unknown[] }).__console)).toContainEqual({ running: true, disabled: true })
    await expect(page.getByTestId('sql-output').locator('.timing').textContent()).resolves.toMatch(/^5 statements in [\d.]+ ms, writes durable in IndexedDB$/)
    // A read alone says nothing of durability; an open block says it is open.
    await page.getByTestId('sql-input').fill('BEGIN; SELECT 1 AS one')
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-output').locator('.timing').textContent(), { timeout: 60_000 }).toMatch(
      /^2 statements in [\d.]+ ms · inside a transaction block/,
    )
    await page.getByTestId('sql-input').fill('ROLLBACK')
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['ROLLBACK'])
    await shot('5a-sql-tags')
    // Delete what this test added: later tests count the todos.
    await page.getByTestId('sql-input').fill("DELETE FROM todos WHERE title = 'tagged'")
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['DELETE 1'])

    // The inspector: the newest transaction open, the one before folded to a summary that names kind and table;
    // a delete under the default replica identity shows its key, not NULLs for the other columns.
    // Transactions only: zero-cache's lag reports (non-transactional messages) may land between them.
    const transactions = page.locator('details[data-testid="inspector-txn"]')
    const newest = transactions.first()
    await expect.poll(() => newest.locator('.meta').textContent(), { timeout: 60_000 }).toMatch(/^1 delete from public\.todos · frame \d+ ms after commit$/)
    await expect(newest.evaluate((e) => (e as HTMLDetailsElement).open)).resolves.toBe(true)
    await expect(newest.locator('.msg.tag-D .text').textContent()).resolves.toMatch(/^public\.todos old key \(id='\d+'\)$/)
    // What "old key" means is on the line's hover.
    await expect(newest.locator('.msg.tag-D .text').getAttribute('title')).resolves.toMatch(/^Delete: .*'old key'.* not NULL, just not sent\./)
    const before = transactions.nth(1)
    await expect(before.evaluate((e) => (e as HTMLDetailsElement).open)).resolves.toBe(false)
    await expect(before.locator('.meta').textContent()).resolves.toMatch(/^1 insert into public\.todos, 1 update of public\.todos · frame \d+ ms after commit$/)

    // The transaction under the reader's pointer is not folded by the next commit; without the pointer, folding goes on.
    const byXid = (xid: string) => transactions.filter({ has: page.locator('.xid', { hasText: new RegExp(`^${xid}$`) }) })
    const emit = async (text: string) => {
      await page.getByTestId('sql-input').fill(`SELECT pg_logical_emit_message(true, 'demo', '${text}')`)
      await page.getByTestId('sql-input').press('Control+Enter') // the keyboard: the pointer stays where it is
      await expect.poll(() => newest.locator('.meta').textContent(), { timeout: 60_000 }).toMatch(/^1 message · frame \d+ ms after commit$/)
      await expect.poll(() => newest.locator('.msg.tag-M .text').textContent(), { timeout: 60_000 }).toContain(text)
      return (await newest.locator('.xid').textContent())!
    }
    await newest.locator('summary').hover()
    const reading = (await newest.locator('.xid').textContent())!
    const first = await emit('while reading')
    await expect(byXid(reading).evaluate((e) => (e as HTMLDetailsElement).open)).resolves.toBe(true)
    await page.mouse.move(0, 0)
    await emit('after reading')
    await expect(byXid(first).evaluate((e) => (e as HTMLDetailsElement).open)).resolves.toBe(false)

    // A large transaction keeps a bounded number of elements on screen.
    await page.getByTestId('sql-input').fill('CREATE TABLE bulk (id int PRIMARY KEY); INSERT INTO bulk SELECT generate_series(1, 5000)')
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['CREATE TABLE', 'INSERT 0 5000'])
    const bulk = page.getByTestId('inspector-txn').first()
    // (zero-cache's DDL triggers add their own messages and an update to the same transaction.)
    await expect.poll(() => bulk.locator('.meta').textContent(), { timeout: 60_000 }).toMatch(/\b5000 inserts into public\.bulk\b.* · frame \d+ ms after commit$/)
    expect(await bulk.locator('.msg').count()).toBeLessThanOrEqual(51)
    await expect(bulk.getByTestId('inspector-more').textContent()).resolves.toMatch(/^… \d+ more messages of this transaction not shown$/)
    expect(await page.getByTestId('inspector').locator('*').count()).toBeLessThan(2000)

    // DROP TABLE: the table leaves the checksums at once (no commit follows a DDL), with no error in the page.
    const bulkRow = page.locator('[data-testid="checksum-row"][data-table="public.bulk"]')
    await expect.poll(() => bulkRow.getAttribute('data-equal'), { timeout: 60_000 }).toBe('true')
    await page.getByTestId('sql-input').fill('DROP TABLE bulk')
    await page.getByTestId('sql-run').click()
    await expect.poll(() => page.getByTestId('sql-tag').allTextContents(), { timeout: 60_000 }).toEqual(['DROP TABLE'])
    await expect.poll(() => bulkRow.count(), { timeout: 60_000 }).toBe(0)
    await expect(uncaught(page)).resolves.toEqual([])
    const banner = (await page.locator('#banner').isHidden()) ? null : await page.locator('#banner').textContent()
    expect(banner).toBeNull()
  }, BOOT_MS)

  it('an SQL error shows its SQLSTATE and position', async () => {
    await page.getByTestId('sql-input').fill('SELECT * FROM todos WHERE titel = 1')
    await page.getByTestId('sql-run').click()
    await expect(page.getByTestId('sql-error-code').textContent({ timeout: 60_000 })).resolves.toBe('42703')
    await expect(page.getByTestId('sql-error').textContent()).resolves.toContain('column "titel" does not exist')
    await expect(page.locator('pre.caret').textContent()).resolves.toBe('SELECT * FROM todos WHERE titel = 1\n                          ^')
    await shot('5-sql-error')
  }, BOOT_MS)

  it('Export downloads a SQL dump that psql loads into PostgreSQL 15, with every table equal', async () => {
    const titles = await page.getByTestId('todo-item').locator('.title').allTextContents()
    const scratch = mkdtempSync(join(tmpdir(), 'tabgres-export-'))
    const pg15 = startPg15(await freePort(), ['postgres', 'imported'])
    try {
      const psql = await exportIntoPg15(page, pg15, scratch)
      // The app's list, and the console's table, as the server holds them.
      expect(psql('SELECT title FROM public.todos ORDER BY id')).toEqual(titles)
      expect(psql(`SELECT id || ' ' || body || ' ' || tags::text || ' ' || meta::text FROM public.notes`)).toEqual(['1 replicated as it is created {a,b} {"x": 1}'])
      // The playground's publication (zero-cache's own come along too).
      expect(psql(`SELECT pubname FROM pg_publication ORDER BY 1`)).toContain('demo')
      expect(psql(`SELECT tablename FROM pg_publication_tables WHERE pubname = 'demo' ORDER BY 1`)).toEqual(expect.arrayContaining(['notes', 'todos']))
    } finally {
      pg15.stop()
      rmSync(scratch, { recursive: true, force: true })
    }
  }, BOOT_MS)

  it('fits the window from a phone to a desktop: nothing sticks out sideways at 360, 390, 900 or 1440 px', async () => {
    for (const width of [360, 390, 900, 1440]) {
      await page.setViewportSize({ width, height: 900 })
      // Elements past the window's right edge, unless a scrolling or clipping box holds them.
      const outside = await page.evaluate(() => {
        const found: string[] = []
        for (const el of Array.from(document.body.querySelectorAll('*'))) {
          const r = el.getBoundingClientRect()
          if (r.width === 0 || r.right <= document.documentElement.clientWidth + 1) continue
          let clipped = false
          for (let p = el.parentElement; p && !clipped; p = p.parentElement) clipped = getComputedStyle(p).overflowX !== 'visible'
          if (!clipped) found.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className} right=${Math.round(r.right)}`)
        }
        // What a reader came for may not hide in a sideways-scrolling box either: each control, and each
        // table's checksum verdict, lies wholly inside every box that clips it.
        const hidden: string[] = []
        const wanted = '[data-testid=checksum-state], [data-testid=checksum-rows], button, input, textarea, .pill'
        for (const el of Array.from(document.querySelectorAll<HTMLElement>(wanted))) {
          const r = el.getBoundingClientRect()
          if (r.width === 0) continue
          for (let p = el.parentElement; p; p = p.parentElement) {
            if (getComputedStyle(p).overflowX === 'visible') continue
            const b = p.getBoundingClientRect()
            if (r.left < b.left - 1 || r.right > b.right + 1) hidden.push(`${el.dataset.testid ?? el.tagName.toLowerCase()} "${el.textContent?.slice(0, 20)}" right=${Math.round(r.right)} in ${p.tagName.toLowerCase()}.${p.className} right=${Math.round(b.right)}`)
          }
        }
        // Against clientWidth, not innerWidth: a classic scrollbar (Firefox's) takes its width from the viewport.
        return { found: found.slice(0, 10), hidden: hidden.slice(0, 10), scroll: document.documentElement.scrollWidth - document.documentElement.clientWidth }
      })
      expect({ width, ...outside }).toEqual({ width, found: [], hidden: [], scroll: 0 })
      await shot(`width-${width}`)
    }
    await page.setViewportSize({ width: 1400, height: 1000 })
  }, BOOT_MS)

  it('a second tab works at once through the first tab\'s worker, and takes the database over when the first closes', async () => {
    const second = new Page(await session.newTab())
    await second.setViewportSize({ width: 1400, height: 1000 })
    await second.goto(url)
    await ready(second)
    // Live at once: the data stays in the first tab's worker, and this tab uses it there.
    const pill = second.getByTestId('status-primary')
    await expect(pill.getAttribute('data-leads')).resolves.toBe('false')
    await expect(pill.textContent()).resolves.toBe("primary: idb://tabgres-demo, held by another tab's worker (this tab uses it there)")
    await expect(second.locator('#banner').isHidden()).resolves.toBe(true)
    await todosInSync(second, 2)
    // Its inspector and replica stream slots of their own (the first tab's stream to it).
    await expect(second.getByTestId('inspector-slot').textContent()).resolves.toBe('demo_inspector_1')
    await expect(second.getByTestId('replica-slot').textContent()).resolves.toBe('demo_replica_1')
    await expect(page.getByTestId('inspector-slot').textContent()).resolves.toBe('demo_inspector')
    // A write in either tab shows in both (each tab's inspector hears every commit).
    await addTodo(second, 'from the second tab')
    await page.getByTestId('todo-list').getByText('from the second tab', { exact: true }).waitFor({ timeout: 60_000 })
    await addTodo(page, 'from the first tab')
    await second.getByTestId('todo-list').getByText('from the first tab', { exact: true }).waitFor({ timeout: 60_000 })
    await todosInSync(page, 4)
    await todosInSync(second, 4)
    // zero-cache runs in one tab of the playground; this one says where it is.
    await second.getByTestId('status-zero').getByText('runs in another tab').waitFor({ timeout: 60_000 })
    const first = page
    page = second
    await shot('6-second-tab-live')
    // Every class the banner shows with while the takeover runs (news, not a failure: styled as info).
    await second.evaluate(() => {
      const banner = document.getElementById('banner')!
      const seen: string[] = []
      ;(window as unknown as { __banner: string[] }).__banner = seen
      new MutationObserver(() => void (banner.hidden || seen.push(banner.className))).observe(banner, { attributes: true, childList: true, characterData: true, subtree: true })
    })
    const closedAt = performance.now()
    await first.close()
    // The takeover: this tab's worker opens the data; the banner shows only while it runs.
    await expect.poll(() => pill.getAttribute('data-leads'), { timeout: BOOT_MS }).toBe('true')
    const takeoverMs = Number(await pill.getAttribute('data-takeover-ms'))
    expect(takeoverMs).toBeGreaterThan(0)
    // "reopened in" counts the open from when this tab's worker got the database, not the wait before it
    // (the first tab's whole life): the open happened within the takeover.
    const openMs = Number(await pill.getAttribute('data-open-ms'))
    expect(openMs).toBeLessThanOrEqual(performance.now() - closedAt)
    // WebKit (2.50) told this page of the old leader's lock seconds after its own worker had taken it and begun to
    // open, so there the takeover as the page saw it can be the shorter.
    if (engine !== 'webkit') expect(openMs).toBeLessThanOrEqual(takeoverMs)
    await expect(second.locator('#banner').isHidden()).resolves.toBe(true)
    const bannerClasses = await second.evaluate(() => (window as unknown as { __banner: string[] }).__banner)
    expect(bannerClasses.length).toBeGreaterThan(0)
    expect(new Set(bannerClasses)).toEqual(new Set(['banner info']))
    await expect(pill.textContent()).resolves.toMatch(new RegExp(`^primary: idb://tabgres-demo, reopened in \\d+ ms in this tab · taken over in ${takeoverMs} ms$`))
    await addTodo(second, 'after the takeover')
    await todosInSync(second, 5)
    const titles = await second.getByTestId('todo-item').locator('.title').allTextContents()
    expect(titles).toEqual(['water the plants', 'written offline', 'from the second tab', 'from the first tab', 'after the takeover'])
    // zero-cache starts in the tab that remains, on the replica the first tab left.
    await zeroReady(second)
    await expect.poll(() => zeroTitles(second), { timeout: 60_000 }).toEqual(titles)
    await shot('7-second-tab-took-over')
  }, RELOAD_MS)

  it('Import: a bad dump shows its SQLSTATE; PostgreSQL 15\'s pg_dump of an export opens as a database of its own, and the way back finds the first as it was', async () => {
    const titles = await page.getByTestId('todo-item').locator('.title').allTextContents()
    const scratch = mkdtempSync(join(tmpdir(), 'tabgres-import-'))
    try {
      // A dump that fails part way: its error as PostgreSQL gives it, nothing opened, the page stays.
      const bad = join(scratch, 'bad.sql')
      writeFileSync(bad, 'CREATE TABLE half_loaded (id int);\nINSERT INTO nowhere VALUES (1);\n')
      await page.getByTestId('import-file').setInputFiles(bad)
      await expect.poll(() => page.locator('#banner.error').textContent(), { timeout: 60_000 }).toBe('42P01: relation "nowhere" does not exist')
      await expect(page.url()).resolves.toBe(url)
      await expect(page.getByTestId('import').isEnabled()).resolves.toBe(true)

      // Out to a real PostgreSQL, a row added there, and PostgreSQL 15's own pg_dump of it back in.
      const fromServer = join(scratch, 'from-pg15.sql')
      const pg15 = startPg15(await freePort(), ['postgres', 'imported'])
      try {
        const psql = await exportIntoPg15(page, pg15, scratch)
        psql(`INSERT INTO public.todos (title) VALUES ('added on PostgreSQL 15')`)
        const dump = spawnSync(join(PG_BIN, 'pg_dump'), ['--no-owner', '-f', fromServer, '-d', pg15.url('imported')], { encoding: 'utf8' })
        expect(dump.stderr).toBe('')
        expect(dump.status).toBe(0)
      } finally {
        pg15.stop()
      }
      await page.getByTestId('import-file').setInputFiles(fromServer)
      await page.waitForURL(/\?db=tabgres-demo-import-[0-9a-f]{8}$/, { timeout: BOOT_MS })
      const imported = new URL(await page.url()).searchParams.get('db')!
      await ready(page)
      await expect(page.locator('#banner.info').textContent()).resolves.toBe(
        `Loaded from-pg15.sql into idb://${imported}, a database of its own; idb://tabgres-demo is as it was (the link in the header goes back).`,
      )
      await expect(page.getByTestId('status-primary').textContent()).resolves.toMatch(new RegExp(`^primary: idb://${imported}, reopened in \\d+ ms in this tab$`))
      const withServerRow = [...titles, 'added on PostgreSQL 15']
      await expect(page.getByTestId('todo-item').locator('.title').allTextContents()).resolves.toEqual(withServerRow)
      // The imported database streams like the first: the replica copies it, and a new todo reaches it.
      await todosInSync(page, withServerRow.length)
      await addTodo(page, 'after the import')
      await todosInSync(page, withServerRow.length + 1)
      await zeroReady(page)
      await expect.poll(() => zeroTitles(page), { timeout: 60_000 }).toEqual([...withServerRow, 'after the import'])
      await shot('8-imported')

      // The same file again: the database it made, as it is now (nothing loaded twice).
      await page.getByTestId('import-file').setInputFiles(fromServer)
      await expect.poll(() => page.locator('#banner.info').textContent(), { timeout: BOOT_MS }).toBe(
        `from-pg15.sql was imported before: this is idb://${imported} as it is now, not loaded again.`,
      )
      await ready(page)
      await expect(page.getByTestId('todo-item').locator('.title').allTextContents()).resolves.toEqual([...withServerRow, 'after the import'])

      // Back to the playground's own database: untouched by the import.
      await page.getByTestId('db-back').click()
      await page.waitForURL(url, { timeout: BOOT_MS })
      await ready(page)
      await expect(page.getByTestId('db-note').isHidden()).resolves.toBe(true)
      await expect(page.getByTestId('todo-item').locator('.title').allTextContents()).resolves.toEqual(titles)
    } finally {
      rmSync(scratch, { recursive: true, force: true })
    }
  }, 3 * BOOT_MS)
})
