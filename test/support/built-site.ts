// A Vite site built for production into a temporary directory, served by
// `vite preview` on 127.0.0.1, with a headless Chromium to visit it: what the
// e2e tests need to test a site as users get it (service worker included).

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type Browser } from 'playwright'
import { build, createLogger, preview, type InlineConfig } from 'vite'
import { CHROMIUM_ARGS, chromiumPath } from './chromium'
import { freePort } from './free-port'

/** Debian's Chromium (or CHROMIUM_PATH), headless, with the flags this network needs. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath, headless: true, args: CHROMIUM_ARGS })
}

export interface BuiltSite {
  url: string
  browser: Browser
  /** What the build warned about (each also printed as usual). */
  warnings: string[]
  /** Closes the browser and the server, and removes the build. */
  close(): Promise<void>
}

export async function serveBuiltSite(config: InlineConfig): Promise<BuiltSite> {
  const outDir = mkdtempSync(join(tmpdir(), 'tabgres-site-'))
  const warnings: string[] = []
  const logger = createLogger('warn')
  const { warn, warnOnce } = logger
  logger.warn = (msg, options) => (warnings.push(msg), warn(msg, options))
  logger.warnOnce = (msg, options) => (warnings.push(msg), warnOnce(msg, options))
  const site: InlineConfig = { logLevel: 'warn', customLogger: logger, ...config, build: { ...config.build, outDir, emptyOutDir: true } }
  let server: Awaited<ReturnType<typeof preview>> | null = null
  let browser: Browser | null = null
  const close = async () => {
    await browser?.close()
    await server?.close()
    rmSync(outDir, { recursive: true, force: true })
  }
  try {
    await build(site)
    const built = warnings.length
    const port = await freePort()
    server = await preview({ ...site, preview: { ...site.preview, host: '127.0.0.1', port, strictPort: true } })
    browser = await launchChromium()
    return { url: `http://127.0.0.1:${port}/`, browser, warnings: warnings.slice(0, built), close }
  } catch (e) {
    await close()
    throw e
  }
}
