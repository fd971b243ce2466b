// A Vite site built for production into a temporary directory and served by
// `vite preview` on 127.0.0.1: what the e2e tests need to test a site as users
// get it (service worker included), in any engine (./browsers). Every HTML
// file of the build starts with ./browsers/page-record.js (the page records
// its own errors) and any init scripts the test gives, so they run before the
// page's own scripts in every engine, served from the network or from a
// service worker's cache alike.

import { readFileSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import type { Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, createLogger, preview, type InlineConfig, type Plugin } from 'vite'
import { freePort } from './free-port'

const RECORD = readFileSync(new URL('./browsers/page-record.js', import.meta.url), 'utf8')

export interface BuiltSite {
  url: string
  /** What the build warned about (each also printed as usual). */
  warnings: string[]
  /**
   * Offline: the server drops every connection and every request as it
   * arrives, as a network that is down does, in every engine alike (no
   * engine's tool can take one browser offline the same way).
   */
  setOffline(offline: boolean): void
  /** Stops the server and removes the build. */
  close(): Promise<void>
}

export interface SiteOptions {
  /** Functions run at the top of every page, before its scripts (self-contained: they are sent as source). */
  initScripts?: (() => void)[]
}

function* htmlFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) yield* htmlFiles(p)
    else if (name.endsWith('.html')) yield p
  }
}

/** The recorder and the init scripts, first in <head> (or first in the file). */
function injectInitScripts(outDir: string, scripts: (() => void)[]): void {
  const tag = `<script>${[RECORD, ...scripts.map((f) => `;(${f.toString()})()`)].join('\n')}</script>`
  for (const file of htmlFiles(outDir)) {
    const html = readFileSync(file, 'utf8')
    const head = html.match(/<head[^>]*>/i)
    writeFileSync(file, head ? html.replace(head[0], `${head[0]}${tag}`) : `${tag}${html}`)
  }
}

/** Drops connections while offline (a preview-server plugin, ahead of every other middleware). */
function offlineSwitch(): { plugin: Plugin; set(offline: boolean): void } {
  let offline = false
  const sockets = new Set<Socket>()
  return {
    set(on) {
      offline = on
      if (on) for (const s of sockets) s.destroy() // kept-alive connections too
    },
    plugin: {
      name: 'e2e-offline-switch',
      configurePreviewServer(server) {
        server.httpServer.on('connection', (s: Socket) => {
          if (offline) return void s.destroy()
          sockets.add(s)
          s.once('close', () => sockets.delete(s))
        })
        server.middlewares.use((req, _res, next) => (offline ? req.socket.destroy() : next()))
      },
    },
  }
}

export async function serveBuiltSite(config: InlineConfig, opts: SiteOptions = {}): Promise<BuiltSite> {
  const outDir = mkdtempSync(join(tmpdir(), 'tabgres-site-'))
  const warnings: string[] = []
  const logger = createLogger('warn')
  const { warn, warnOnce } = logger
  logger.warn = (msg, options) => (warnings.push(msg), warn(msg, options))
  logger.warnOnce = (msg, options) => (warnings.push(msg), warnOnce(msg, options))
  const site: InlineConfig = { logLevel: 'warn', customLogger: logger, ...config, build: { ...config.build, outDir, emptyOutDir: true } }
  const offline = offlineSwitch()
  let server: Awaited<ReturnType<typeof preview>> | null = null
  const close = async () => {
    await server?.close()
    rmSync(outDir, { recursive: true, force: true })
  }
  try {
    await build(site)
    const built = warnings.length
    injectInitScripts(outDir, opts.initScripts ?? [])
    const port = await freePort()
    server = await preview({ ...site, plugins: [offline.plugin, ...(site.plugins ?? [])], preview: { ...site.preview, host: '127.0.0.1', port, strictPort: true } })
    return { url: `http://127.0.0.1:${port}/`, warnings: warnings.slice(0, built), setOffline: offline.set, close }
  } catch (e) {
    await close()
    throw e
  }
}
