// The library as published: `npm run build:lib` output (dist/, package.json
// "exports"), consumed by name from a separate Vite app the way a user's app
// would, built for production and run in every engine, each from a fresh
// profile: the worker the client spawns is found and bundled, PGlite comes
// from the app's own dependencies, a write streams back as a decoded Insert
// and is acknowledged, and after a reload the stream resumes with the next
// write only (exactly once). The .d.ts files type-check a consumer.

import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { enginesToTest, launch, waitForFunction } from '../support/browsers'

const run = promisify(execFile)
const repo = fileURLToPath(new URL('../..', import.meta.url))
const TIMEOUT_MS = 240_000

let app: string
let site: BuiltSite | null = null

const MAIN_TS = `
import { openDatabase, PgError, type PgoutputMessage } from 'tabgres'
import { startZeroCache, type ZeroCacheOptions } from 'tabgres/zero'

// zero-cache in the tab, as an app would start it (typed here; the Zero panel of the playground runs it).
const zeroOptions = (upstream: Awaited<ReturnType<typeof openDatabase>>): ZeroCacheOptions => ({ upstream, url: new URL('./zero-cache/zero-cache.js', document.baseURI) })
Object.assign(window, { startZeroCache, zeroOptions })

// The first load writes and acknowledges row 1; the reload (the driver's) writes row 2 and must stream it, and only it.
const reloaded = localStorage.getItem('library-check') === 'acked'

async function main(): Promise<string> {
  const db = await openDatabase('library-check')
  if (!reloaded) {
    await db.exec('CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR ALL TABLES')
    await db.createSlot('s')
  }
  const stream = await db.startReplication({ slot: 's', options: { proto_version: '1', publication_names: 'p' } })
  await db.query('INSERT INTO t VALUES ($1, $2)', reloaded ? [2, 'after the reload'] : [1, 'from the package'])
  try {
    await db.query('SELECT nope FROM t')
  } catch (e) {
    if (!(e instanceof PgError) || e.code !== '42703') throw e
  }
  const got: string[] = []
  for await (const m of stream.messages()) {
    const msg: PgoutputMessage | null = m.kind === 'xlog' ? m.message : null
    if (msg?.tag === 'I') {
      const c = msg.new.columns[1]
      got.push(c.kind === 't' ? c.value : c.kind)
    } else if (msg?.tag === 'C') {
      stream.ack(msg.endLsn)
      // The ack reaches the slot before the page says so (the standby status is flushed at close).
      await stream.close()
      await db.close()
      localStorage.setItem('library-check', 'acked')
      return got.join()
    }
  }
  throw new Error('the stream ended')
}

main().then(
  (v) => Object.assign(window, { libraryResult: { reloaded, v } }),
  (e) => Object.assign(window, { libraryResult: { reloaded, v: 'error: ' + String(e) } }),
)
`

beforeAll(async () => {
  await run('npx', ['tsx', 'scripts/build-lib.ts'], { cwd: repo })
  app = mkdtempSync(join(tmpdir(), 'tabgres-app-'))
  // The app depends on tabgres by name, as if installed (a symlink to this package).
  mkdirSync(join(app, 'node_modules'))
  symlinkSync(repo, join(app, 'node_modules', 'tabgres'), 'dir')
  writeFileSync(join(app, 'index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><script type="module" src="./main.ts"></script>')
  writeFileSync(join(app, 'main.ts'), MAIN_TS)
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'Bundler', lib: ['ES2022', 'DOM', 'DOM.Iterable'], strict: true, noEmit: true, skipLibCheck: true, types: [] }, include: ['main.ts'] }),
  )
}, TIMEOUT_MS)

afterAll(async () => {
  await site?.close()
  if (app) rmSync(app, { recursive: true, force: true })
})

it('the built package type-checks in a consumer', async () => {
  await run(join(repo, 'node_modules/.bin/tsc'), ['-p', join(app, 'tsconfig.json')], { cwd: app })
}, TIMEOUT_MS)

it('the app is built and served, zero-cache\'s files beside it', async () => {
  site = await serveBuiltSite({
    root: app,
    configFile: false,
    // What the README asks of Vite users: PGlite and tabgres stay out of pre-bundling; ES workers.
    optimizeDeps: { exclude: ['@electric-sql/pglite', 'tabgres'] },
    worker: { format: 'es' },
    build: { rollupOptions: { onwarn: () => {} } },
    // zero-cache's bundle, shipped prebuilt in the package, served with the app.
    plugins: [((await import(join(repo, 'dist/zero/vite.js'))) as typeof import('../../src/zero/vite')).zeroCacheAssets()],
  })
  // tabgres/zero/vite put zero-cache's files in the build, beside each other, as its workers import them.
  for (const [file, type] of [['zero-cache.js', 'javascript'], ['main.js', 'javascript'], ['change-streamer.js', 'javascript'], ['sqlite3.wasm', 'application/wasm']] as const) {
    const res = await fetch(new URL(`zero-cache/${file}`, site.url))
    expect(res.status, file).toBe(200)
    expect(res.headers.get('content-type'), file).toContain(type)
  }
}, TIMEOUT_MS)

it.each(enginesToTest())('in %s, from a fresh profile, the app opens a database, streams a write, acknowledges it, reloads and resumes exactly once', async (engine) => {
  const session = await launch(engine)
  try {
    const tab = await session.newTab()
    const result = () =>
      waitForFunction(tab, () => (window as unknown as { libraryResult?: { reloaded: boolean; v: string } }).libraryResult, undefined, {
        timeout: TIMEOUT_MS,
        what: 'the app',
      })
    await tab.goto(site!.url)
    expect(await result()).toEqual({ reloaded: false, v: 'from the package' })
    await tab.reload()
    expect(await result()).toEqual({ reloaded: true, v: 'after the reload' })
    expect(await tab.evaluate(() => (window as unknown as { __pageErrors: string[] }).__pageErrors, undefined)).toEqual([])
  } finally {
    await session.close()
  }
}, TIMEOUT_MS)
