// Chromium through Playwright (./driver.ts): Debian's Chromium, headless, in a
// fresh context (a profile of its own).

import { chromium, type Browser, type BrowserContext, type Page } from 'playwright'
import type { LaunchOptions, Session, Tab } from './driver.ts'
import { CHROMIUM_ARGS, chromiumPath } from './engines.ts'

/** Debian's Chromium (or CHROMIUM_PATH), headless, with the flags this network needs. */
export function launchChromium(opts: LaunchOptions = {}): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: CHROMIUM_ARGS,
    // Playwright turns the back/forward cache off by default; a user's Chromium has it.
    ignoreDefaultArgs: opts.bfcache ? ['--disable-back-forward-cache'] : undefined,
  })
}

export function playwrightTab(page: Page): Tab {
  return {
    // Module scripts have run by DOMContentLoaded; a page restored from the back/forward cache fires none of it.
    goto: async (url) => void (await page.goto(url, { waitUntil: 'domcontentloaded' })),
    reload: async () => void (await page.reload({ waitUntil: 'domcontentloaded' })),
    back: async () => void (await page.goBack({ waitUntil: 'commit' })),
    forward: async () => void (await page.goForward({ waitUntil: 'commit' })),
    url: async () => page.url(),
    evaluate: (fn, arg) => page.evaluate(fn as never, arg) as never,
    click: (css) => page.locator(css).click(),
    hover: (css) => page.locator(css).hover(),
    fill: (css, value) => page.locator(css).fill(value),
    press: (css, keys) => page.locator(css).press(keys),
    moveMouse: (x, y) => page.mouse.move(x, y),
    setViewport: (width, height) => page.setViewportSize({ width, height }),
    screenshot: async (path) => void (await page.screenshot({ path, fullPage: true })),
    close: () => page.close(),
  }
}

export async function launchPlaywright(opts: LaunchOptions = {}): Promise<Session> {
  const browser = await launchChromium(opts)
  let context: BrowserContext
  try {
    context = await browser.newContext({ viewport: { width: 1400, height: 1000 } })
  } catch (e) {
    await browser.close()
    throw e
  }
  return {
    engine: 'chromium',
    newTab: async () => playwrightTab(await context.newPage()),
    close: () => browser.close(),
  }
}
