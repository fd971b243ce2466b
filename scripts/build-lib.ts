// `npm run build:lib`: the library as ESM plus .d.ts in dist/.
//
//   dist/client/index.js   the page's API (openDatabase, ReplicationStream, decoder)
//   dist/worker/index.js   the database worker the client spawns
//   dist/worker/broker.js  the SharedWorker through which tabs reach the worker holding a database
//   dist/engine/index.js   the engine for a PGlite of your own (Node)
//   dist/node/server.js    the TCP wire server (Node)
//   dist/testing/node.js   the testing kit for Node (fresh in-memory databases)
//   dist/testing/browser.js  the testing kit for the browser, and its worker dist/worker/kit.js
//   dist/zero/tab/index.js   zero-cache in the tab (startZeroCache), running the bundle in dist/zero-cache/
//   dist/zero/vite.js        the Vite plugin that serves that bundle with an app
//
// PGlite, Comlink and Zero (a peer of tabgres/zero) stay imports, not inlined: the app's
// bundler resolves them, and PGlite finds its wasm and data files beside its
// own module. The client spawns the worker with
// `new Worker(new URL('../worker/index.js', import.meta.url))`, the pattern
// bundlers (Vite, webpack 5, esbuild) recognise; the sources name the .ts
// file, so that one string is rewritten after bundling.

import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { ensureTemplateAsset } from './template-asset'

const OUT = 'dist'
for (const d of ['client', 'worker', 'node', 'engine', 'protocol', 'wire', 'orez', 'shared', 'testing', 'chunks', 'zero', 'zero-cache']) rmSync(`${OUT}/${d}`, { recursive: true, force: true })

await build({
  entryPoints: [
    'src/client/index.ts',
    'src/worker/index.ts',
    'src/worker/kit.ts',
    'src/worker/broker.ts',
    'src/engine/index.ts',
    'src/node/server.ts',
    'src/testing/node.ts',
    'src/testing/browser.ts',
    'src/zero/tab/index.ts',
    'src/zero/vite.ts',
  ],
  outdir: OUT,
  outbase: 'src',
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: true,
  external: ['@electric-sql/pglite', '@electric-sql/pglite/*', 'comlink', '@rocicorp/zero', '@rocicorp/zero/*', 'node:*', 'vite'],
  logLevel: 'warning',
})

/**
 * The page-side modules name their worker's .ts source: point them at the
 * built .js. Code shared by two entries moves to chunks/, a sibling of
 * client/ and testing/, so "../worker/" means the same folder from each.
 */
function rewriteWorkerUrl(worker: string) {
  const url = new RegExp(`new URL\\((["'])\\.\\./worker/${worker}\\.ts\\1, import\\.meta\\.url\\)`, 'g')
  const files = ['client', 'testing', 'chunks'].flatMap((d) => readdirSync(`${OUT}/${d}`).filter((f) => f.endsWith('.js')).map((f) => `${OUT}/${d}/${f}`))
  let found = 0
  for (const file of files) {
    const source = readFileSync(file, 'utf8')
    const n = source.match(url)?.length ?? 0
    if (n === 0) continue
    found += n
    writeFileSync(file, source.replace(url, `new URL("../worker/${worker}.js", import.meta.url)`))
  }
  if (found !== 1) throw new Error(`expected one URL of worker/${worker}.ts to rewrite, found ${found}`)
}
rewriteWorkerUrl('index')
rewriteWorkerUrl('kit')
rewriteWorkerUrl('broker')

// The template data directory the workers fetch (src/worker/storage/template-source.ts),
// beside them at the path their URL names, with its key (the Node kit checks it).
for (const worker of [`${OUT}/worker/index.js`, `${OUT}/worker/kit.js`]) {
  if (!readFileSync(worker, 'utf8').includes(`new URL("./storage/template.tar.gz", import.meta.url)`)) {
    throw new Error(`${worker}: the template's URL moved; copy the asset where it points`)
  }
}
mkdirSync(`${OUT}/worker/storage`, { recursive: true })
const asset = await ensureTemplateAsset()
copyFileSync(asset, `${OUT}/worker/storage/template.tar.gz`)
copyFileSync(`${asset}.key`, `${OUT}/worker/storage/template.tar.gz.key`)

// zero-cache for the tab, prebuilt: an app serves the folder (tabgres/zero/vite) rather than bundling it.
execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-zero.ts', '--out', `${OUT}/zero-cache`], { stdio: 'inherit' })

execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' })
console.log(`library built in ${OUT}/ (client, worker, engine, node, testing, zero, zero-cache, .d.ts)`)
