// `npm run build:lib`: the library as ESM plus .d.ts in dist/.
//
//   dist/client/index.js   the page's API (openDatabase, ReplicationStream, decoder)
//   dist/worker/index.js   the database worker the client spawns
//   dist/engine/index.js   the engine for a PGlite of your own (Node)
//   dist/node/server.js    the TCP wire server (Node)
//
// PGlite and Comlink stay imports (dependencies, not inlined): the app's
// bundler resolves them, and PGlite finds its wasm and data files beside its
// own module. The client spawns the worker with
// `new Worker(new URL('../worker/index.js', import.meta.url))`, the pattern
// bundlers (Vite, webpack 5, esbuild) recognise; the sources name the .ts
// file, so that one string is rewritten after bundling.

import { build } from 'esbuild'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { ensureTemplateAsset } from './template-asset'

const OUT = 'dist'
for (const d of ['client', 'worker', 'node', 'engine', 'protocol', 'wire', 'orez', 'shared', 'chunks']) rmSync(`${OUT}/${d}`, { recursive: true, force: true })

await build({
  entryPoints: ['src/client/index.ts', 'src/worker/index.ts', 'src/engine/index.ts', 'src/node/server.ts'],
  outdir: OUT,
  outbase: 'src',
  bundle: true,
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  sourcemap: true,
  external: ['@electric-sql/pglite', '@electric-sql/pglite/*', 'comlink', 'node:*'],
  logLevel: 'warning',
})

const client = `${OUT}/client/index.js`
const source = readFileSync(client, 'utf8')
const workerUrl = /new URL\((["'])\.\.\/worker\/index\.ts\1, import\.meta\.url\)/g
const found = source.match(workerUrl)?.length ?? 0
if (found !== 1) throw new Error(`${client}: expected one worker URL to rewrite, found ${found}`)
writeFileSync(client, source.replace(workerUrl, `new URL("../worker/index.js", import.meta.url)`))

// The template data directory the worker fetches (see src/worker/storage/template.ts),
// beside the worker at the path its URL names.
const worker = `${OUT}/worker/index.js`
if (!readFileSync(worker, 'utf8').includes(`new URL("./storage/template.tar.gz", import.meta.url)`)) {
  throw new Error(`${worker}: the template's URL moved; copy the asset where it points`)
}
mkdirSync(`${OUT}/worker/storage`, { recursive: true })
copyFileSync(await ensureTemplateAsset(), `${OUT}/worker/storage/template.tar.gz`)

execFileSync('npx', ['tsc', '-p', 'tsconfig.build.json'], { stdio: 'inherit' })
console.log(`library built in ${OUT}/ (client, worker, engine, node, .d.ts)`)
