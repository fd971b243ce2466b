// The playground, built as a static site and driven in Debian's Chromium:
// an item added in the app reaches the inspector and the replica (checksums
// equal), survives a reload, the page works offline after the first visit,
// and an SQL error shows its SQLSTATE. Each step saves a screenshot under
// test-results/demo/ (look at them: would a newcomer understand the page?).
//
// Every wait is on something the page shows (Playwright polls the DOM); the
// page marks itself ready with <body data-ready>.

import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { BrowserContext, Page } from 'playwright'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'

const config = fileURLToPath(new URL('../../demo/vite.config.ts', import.meta.url))
const shots = fileURLToPath(new URL('../../test-results/demo/', import.meta.url))
/** Booting PGlite twice (primary and replica) on a loaded 2-core machine takes a while. */
const BOOT_MS = 180_000

let site: BuiltSite
let context: BrowserContext
let page: Page
let url: string

async function ready(p: Page): Promise<void> {
  await p.waitForSelector('body[data-ready="true"]', { timeout: BOOT_MS })
}

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })
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

beforeAll(async () => {
  mkdirSync(shots, { recursive: true })
  site = await serveBuiltSite({ configFile: config })
  url = site.url
  context = await site.browser.newContext({ viewport: { width: 1400, height: 1000 } })
  page = await context.newPage()
  page.on('pageerror', (e) => console.error('page error:', e))
}, BOOT_MS)

afterAll(() => site?.close())

describe('playground (built, in Chromium)', () => {
  it('an added item shows in the app, in the inspector and in the replica, with equal checksums', async () => {
    await page.goto(url)
    await ready(page)
    await todosInSync(page, 0)
    await shot('1-first-load')

    await addTodo(page, 'water the plants')
    const txn = page.getByTestId('inspector-txn').filter({ hasText: "title='water the plants'" })
    await expect.poll(() => txn.count(), { timeout: 60_000 }).toBe(1)
    await expect(txn.first().locator('.tag').filter({ hasText: 'I Insert' }).count()).resolves.toBe(1)
    await todosInSync(page, 1)

    // Raw bytes on demand: the Insert message starts with 'I' (0x49).
    await txn.first().locator('.msg.tag-I .msg-line').click()
    await expect(txn.first().locator('.msg.tag-I pre.hex').textContent()).resolves.toMatch(/^0000 {2}49 /)
    await shot('2-item-added')
  }, BOOT_MS)

  it('the data is still there after a reload, and the replica copies it again', async () => {
    await page.reload()
    await ready(page)
    await expect(page.getByTestId('todo-item').filter({ hasText: 'water the plants' }).count()).resolves.toBe(1)
    await expect(page.getByTestId('status-primary').textContent()).resolves.toContain('reopened')
    await todosInSync(page, 1)
    await shot('3-after-reload')
  }, BOOT_MS)

  it('works offline after the first visit', async () => {
    await page.getByTestId('offline-state').getByText('ready to work offline').waitFor({ timeout: 60_000 })
    await context.setOffline(true)
    try {
      // The page comes from the service worker's cache, not the network or the HTTP cache.
      const res = await page.reload()
      expect(res?.fromServiceWorker()).toBe(true)
      await ready(page)
      await expect(page.getByTestId('todo-item').filter({ hasText: 'water the plants' }).count()).resolves.toBe(1)
      await addTodo(page, 'written offline')
      await todosInSync(page, 2)
      await shot('4-offline')
    } finally {
      await context.setOffline(false)
    }
  }, BOOT_MS)

  it('a table created from the console reaches the replica, arrays and jsonb included', async () => {
    await page.getByRole('button', { name: 'a new table' }).click()
    await page.getByTestId('sql-run').click()
    await page.getByTestId('sql-output').getByText('OK, 1 row affected').waitFor({ timeout: 60_000 })
    const row = page.locator('[data-testid="checksum-row"][data-table="public.notes"]')
    await expect.poll(async () => ((await row.count()) ? await row.getAttribute('data-equal') : null), { timeout: 60_000 }).toBe('true')
    await expect(row.locator('[data-testid="checksum-replica"]').textContent()).resolves.toMatch(/^1 row · [0-9a-f]{8}$/)
  }, BOOT_MS)

  it('an SQL error shows its SQLSTATE and position', async () => {
    await page.getByTestId('sql-input').fill('SELECT * FROM todos WHERE titel = 1')
    await page.getByTestId('sql-run').click()
    await expect(page.getByTestId('sql-error-code').textContent({ timeout: 60_000 })).resolves.toBe('42703')
    await expect(page.getByTestId('sql-error').textContent()).resolves.toContain('column "titel" does not exist')
    await expect(page.locator('pre.caret').textContent()).resolves.toBe('SELECT * FROM todos WHERE titel = 1\n                          ^')
    await shot('5-sql-error')
  }, BOOT_MS)

  it('a second tab waits while the first holds the database, then opens it intact when the first closes', async () => {
    const second = await context.newPage()
    second.on('pageerror', (e) => console.error('second tab, page error:', e))
    await second.goto(url)
    await second.getByTestId('status-primary').getByText('open in another tab').waitFor({ timeout: BOOT_MS })
    await second.locator('#banner').getByText('opens it as soon as that tab is closed').waitFor()
    // The first tab is unaffected and keeps writing.
    await addTodo(page, 'while another tab waits')
    await todosInSync(page, 3)
    const first = page
    page = second
    await shot('6-second-tab-waiting')
    await first.close()
    await ready(second)
    await expect(second.locator('#banner').isHidden()).resolves.toBe(true)
    const titles = await second.getByTestId('todo-item').locator('.title').allTextContents()
    expect(titles).toEqual(['water the plants', 'written offline', 'while another tab waits'])
    await todosInSync(second, 3)
    await shot('7-second-tab-took-over')
  }, BOOT_MS)
})
