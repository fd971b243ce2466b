// The playground: `npm run demo` builds it as a static site (dist/demo) and
// serves it; `npm run demo:dev` serves the sources with hot reload (no
// service worker there: it only runs against a build).

import { execFile } from 'node:child_process'
import { readdirSync, statSync, writeFileSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { defineConfig, type Plugin } from 'vite'
import { crossOriginIsolation } from '../scripts/vite-cross-origin-isolation.ts'
import { nodeOnlyImports } from '../scripts/vite-node-only.ts'
import { templateAsset } from '../scripts/vite-template.ts'
import { zeroCacheAssets } from '../src/zero/vite.ts'

const root = fileURLToPath(new URL('.', import.meta.url))
const defaultOutDir = fileURLToPath(new URL('../dist/demo', import.meta.url))
const repo = fileURLToPath(new URL('..', import.meta.url))
/** zero-cache's bundle for the Zero panel, built from this checkout (the published package ships it prebuilt). */
const zeroCacheDir = join(repo, 'node_modules/.tabgres/zero-cache')

function* walk(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) yield* walk(p)
    else yield p
  }
}

/**
 * Writes precache.json: every file of the finished build (the page, its
 * scripts, both workers, PGlite's wasm and data), which the service worker
 * (public/sw.js) caches on install so the next load works offline. Listing
 * the output directory after the build, rather than the page's bundle, is
 * what catches the worker chunks and the assets they load themselves.
 */
function precacheManifest(): Plugin {
  let outDir = defaultOutDir
  return {
    name: 'tabgres-precache-manifest',
    apply: 'build',
    configResolved(config) {
      outDir = resolve(config.root, config.build.outDir)
    },
    closeBundle() {
      const files = [...walk(outDir)].map((p) => relative(outDir, p).split('\\').join('/'))
      const assets = files.filter((f) => f !== 'sw.js' && f !== 'precache.json')
      const version = assets.filter((f) => f.startsWith('assets/') || f.startsWith('zero-cache/')).sort().join('|')
      let h = 0
      for (let i = 0; i < version.length; i++) h = (Math.imul(h, 31) + version.charCodeAt(i)) | 0
      const manifest = { version: (h >>> 0).toString(16), files: ['./', ...assets.filter((f) => f !== 'index.html')] }
      writeFileSync(join(outDir, 'precache.json'), JSON.stringify(manifest, null, 2))
    },
  }
}

/** Builds zero-cache's bundle (scripts/build-zero.ts) before the site is built or served. */
function buildZeroCache(): Plugin {
  return {
    name: 'tabgres-build-zero-cache',
    // Its own process (esbuild), before the page is bundled or served.
    async config() {
      await promisify(execFile)(process.execPath, ['--import', 'tsx', 'scripts/build-zero.ts', '--out', zeroCacheDir], { cwd: repo })
    },
  }
}

/**
 * Rolldown's notice that plugins took a large share of the build depends on
 * how busy the machine is, not on the code: a build on a loaded machine would
 * warn where the same build elsewhere does not.
 */
const CHECKS = { bundlerTimings: false }

export default defineConfig(({ command }) => ({
  root,
  // The service worker belongs to the built site only (offline.ts).
  define: { __BUILT_SITE__: JSON.stringify(command === 'build') },
  base: './',
  // PGlite loads its wasm and data relative to its own module: pre-bundling
  // would move it away from them. Comlink is shared by page and workers.
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink', '@rocicorp/zero'] },
  // Workers are bundled by a build of their own: they need the plugin, and the checks, too.
  worker: { format: 'es', plugins: () => [nodeOnlyImports()], rolldownOptions: { checks: CHECKS } },
  build: {
    outDir: defaultOutDir,
    emptyOutDir: true,
    target: 'es2022',
    chunkSizeWarningLimit: 2048,
    rolldownOptions: {
      checks: CHECKS,
      // PGlite's Emscripten glue uses eval on purpose; the warning would only bury real ones.
      onwarn(warning, warn) {
        if (warning.code === 'EVAL' && warning.id?.includes('@electric-sql/pglite')) return
        warn(warning)
      },
    },
  },
  server: { host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
  // zero-cache's files are emitted into the build before precacheManifest lists it, so they work offline too.
  plugins: [crossOriginIsolation(), nodeOnlyImports(), templateAsset(), buildZeroCache(), zeroCacheAssets({ dir: zeroCacheDir, sourceMaps: false }), precacheManifest()],
}))
