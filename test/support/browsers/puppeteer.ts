// Firefox through puppeteer-core over WebDriver BiDi (./driver.ts): Debian's
// Firefox ESR, headless, with a fresh profile that puppeteer makes and
// removes.

import puppeteer, { type KeyInput, type Page } from 'puppeteer-core'
import { chord, type LaunchOptions, type Session, type Tab } from './driver.ts'
import { firefoxPath } from './engines.ts'

function puppeteerTab(page: Page): Tab {
  const nav = { waitUntil: 'domcontentloaded' as const, timeout: 0 }
  return {
    goto: async (url) => void (await page.goto(url, nav)),
    reload: async () => void (await page.reload(nav)),
    // A page restored from the back/forward cache fires no DOMContentLoaded: the history step is done once the URL changed.
    back: async () => void (await page.goBack({ waitUntil: [], timeout: 0 } as never)),
    forward: async () => void (await page.goForward({ waitUntil: [], timeout: 0 } as never)),
    // The document's own: puppeteer's page.url() can lag a navigation the page made itself.
    url: () => page.evaluate(() => location.href),
    evaluate: (fn, arg) => page.evaluate(fn as never, arg) as never,
    // An element handle, not a puppeteer Locator: a Locator waits for the box to hold still over
    // animation frames, which a panel that streams (the inspector) never does.
    click: async (css) => {
      const el = await page.$(css)
      if (!el) throw new Error(`no element ${css}`)
      await el.click()
    },
    hover: async (css) => {
      const el = await page.$(css)
      if (!el) throw new Error(`no element ${css}`)
      await el.hover()
    },
    fill: (css, value) => page.locator(css).fill(value),
    press: async (css, keys) => {
      await page.focus(css)
      const ks = chord(keys) as KeyInput[]
      for (const k of ks.slice(0, -1)) await page.keyboard.down(k)
      await page.keyboard.press(ks[ks.length - 1])
      for (const k of ks.slice(0, -1).reverse()) await page.keyboard.up(k)
    },
    moveMouse: (x, y) => page.mouse.move(x, y),
    setViewport: (width, height) => page.setViewport({ width, height }),
    screenshot: async (path) => void (await page.screenshot({ path: path as `${string}.png`, fullPage: true })),
    close: () => page.close(),
  }
}

export async function launchFirefox(_opts: LaunchOptions = {}): Promise<Session> {
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: firefoxPath,
    headless: true,
    protocolTimeout: 0, // an evaluate that waits (a page's own bounded wait) is not the protocol hanging
    extraPrefsFirefox: {
      // Nothing outside loopback answers here: no update, telemetry or safe-browsing fetches.
      'network.captive-portal-service.enabled': false,
      'browser.safebrowsing.update.enabled': false,
      'app.update.enabled': false,
    },
  })
  const pages = await browser.pages()
  let spare: Page | undefined = pages[0]
  return {
    engine: 'firefox',
    async newTab() {
      // The first tab is the one Firefox opened with.
      const page = spare ?? (await browser.newPage())
      spare = undefined
      await page.setViewport({ width: 1400, height: 1000 })
      return puppeteerTab(page)
    },
    close: () => browser.close(),
  }
}
