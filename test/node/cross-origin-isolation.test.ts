// scripts/vite-cross-origin-isolation.ts: COOP and COEP on every answer of
// Vite's dev server and of `vite preview`, revalidations (304) and 404s
// included. WebKit fails a module worker's load when a 304 lacks them. Vite's
// own `server.headers` / `preview.headers` are not sent on a 304: the last
// tests show it, so the plugin is what makes the difference.

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build, createServer, preview, type InlineConfig, type PluginOption } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CROSS_ORIGIN_ISOLATION, crossOriginIsolation } from '../../scripts/vite-cross-origin-isolation'
import { freePort } from '../support/free-port'

const root = mkdtempSync(join(tmpdir(), 'tabgres-coi-'))
const outDir = join(root, 'dist')
const closers: (() => Promise<void>)[] = []

/** A page that starts a module worker, as the library's client does. */
function writeSite(): void {
  writeFileSync(join(root, 'index.html'), '<!doctype html>\n<html><head><script type="module" src="./main.js"></script></head><body></body></html>\n')
  writeFileSync(join(root, 'main.js'), "new Worker(new URL('./worker.js', import.meta.url), { type: 'module' })\n")
  writeFileSync(join(root, 'worker.js'), "self.postMessage('up')\n")
}

const site = (plugins: PluginOption[]): InlineConfig => ({
  configFile: false,
  root,
  logLevel: 'silent',
  worker: { format: 'es' },
  build: { outDir, emptyOutDir: true },
  plugins,
})

/** A preview server on the build; `headers` as Vite's own option. */
async function startPreview(plugins: PluginOption[], headers?: Record<string, string>): Promise<string> {
  const port = await freePort()
  const server = await preview({ ...site(plugins), preview: { host: '127.0.0.1', port, strictPort: true, headers } })
  closers.push(() => server.close())
  return `http://127.0.0.1:${port}`
}

/** A dev server on the sources; `headers` as Vite's own option. */
async function startDev(plugins: PluginOption[], headers?: Record<string, string>): Promise<string> {
  const port = await freePort()
  const server = await createServer({ ...site(plugins), optimizeDeps: { noDiscovery: true }, server: { host: '127.0.0.1', port, strictPort: true, headers, ws: false } })
  closers.push(() => server.close())
  await server.listen()
  return `http://127.0.0.1:${port}`
}

interface Answer {
  status: number
  coop: string | null
  coep: string | null
  etag: string | null
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(url, { headers })
  await res.arrayBuffer()
  const h = res.headers
  return { status: res.status, coop: h.get('cross-origin-opener-policy'), coep: h.get('cross-origin-embedder-policy'), etag: h.get('etag') }
}

/** The first answer (200, with an ETag), then the revalidation with it. */
async function getTwice(url: string): Promise<[Answer, Answer]> {
  const first = await get(url)
  expect(first.etag, `${url} has an ETag`).toBeTruthy()
  return [first, await get(url, { 'If-None-Match': first.etag! })]
}

const isolated = (status: number) => ({ status, coop: 'same-origin', coep: 'require-corp' })
const bare = (status: number) => ({ status, coop: null, coep: null })
const seen = ({ status, coop, coep }: Answer) => ({ status, coop, coep })

let worker = ''

beforeAll(async () => {
  writeSite()
  await build(site([crossOriginIsolation()]))
  const file = readdirSync(join(outDir, 'assets')).find((f) => /^worker-.*\.js$/.test(f))
  if (!file) throw new Error(`no worker chunk in ${readdirSync(join(outDir, 'assets')).join(', ')}`)
  worker = `/assets/${file}`
})

afterAll(async () => {
  await Promise.all(closers.map((close) => close()))
  rmSync(root, { recursive: true, force: true })
})

describe('crossOriginIsolation() on vite preview', () => {
  let base = ''
  beforeAll(async () => {
    base = await startPreview([crossOriginIsolation()])
  })

  it('sends both headers on the page, 200 and 304', async () => {
    const [first, again] = await getTwice(`${base}/`)
    expect(seen(first)).toEqual(isolated(200))
    expect(seen(again)).toEqual(isolated(304))
  })

  it("sends both headers on the worker's chunk, 200 and 304", async () => {
    const [first, again] = await getTwice(`${base}${worker}`)
    expect(seen(first)).toEqual(isolated(200))
    expect(seen(again)).toEqual(isolated(304))
  })

  it('sends both headers on a 404', async () => {
    // Not a page request (Accept */* would get the SPA fallback's index.html).
    expect(seen(await get(`${base}/assets/missing.js`, { Accept: 'text/javascript' }))).toEqual(isolated(404))
  })
})

describe('crossOriginIsolation() on the dev server', () => {
  let base = ''
  beforeAll(async () => {
    base = await startDev([crossOriginIsolation()])
  })

  it('sends both headers on the page', async () => {
    expect(seen(await get(`${base}/`))).toEqual(isolated(200))
  })

  it('sends both headers on a module, 200 and 304', async () => {
    const [first, again] = await getTwice(`${base}/worker.js`)
    expect(seen(first)).toEqual(isolated(200))
    expect(seen(again)).toEqual(isolated(304))
  })
})

describe("without the plugin, Vite's own header options", () => {
  it('preview.headers: on the 200, not on the 304', async () => {
    const base = await startPreview([], CROSS_ORIGIN_ISOLATION)
    const [first, again] = await getTwice(`${base}${worker}`)
    expect(seen(first)).toEqual(isolated(200))
    expect(seen(again)).toEqual(bare(304))
  })

  it('server.headers: on the 200, not on the 304', async () => {
    const base = await startDev([], CROSS_ORIGIN_ISOLATION)
    const [first, again] = await getTwice(`${base}/worker.js`)
    expect(seen(first)).toEqual(isolated(200))
    expect(seen(again)).toEqual(bare(304))
  })
})
