// `tabgres/zero/vite`: a Vite plugin that serves zero-cache's bundle for the
// tab with the app, under `<base>zero-cache/` (the URL startZeroCache's `url`
// names: `${import.meta.env.BASE_URL}zero-cache/zero-cache.js`).
//
// The bundle is a folder, not one module: zero-cache starts its workers with
// `import(new URL('./main.js', import.meta.url))` and the chunks import each
// other, so every file keeps its name beside the others. That is why it is
// copied as it is rather than handed to Vite's bundler.

import { createReadStream, existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Plugin } from 'vite'

export interface ZeroCacheAssetsOptions {
  /** The bundle's folder; the one this package ships (dist/zero-cache) if not given. */
  dir?: string
  /** The folder under the site's base the bundle is served from. Default 'zero-cache'. */
  path?: string
  /**
   * Whether the build carries the bundle's source maps (19 MB, against 6 MB of code and wasm). Default true;
   * a site that caches every file for offline use (the playground) leaves them out.
   */
  sourceMaps?: boolean
}

const TYPES: Record<string, string> = { '.js': 'text/javascript', '.wasm': 'application/wasm', '.map': 'application/json', '.txt': 'text/plain' }

function files(dir: string): string[] {
  return readdirSync(dir).filter((f) => statSync(join(dir, f)).isFile())
}

export function zeroCacheAssets(options: ZeroCacheAssetsOptions = {}): Plugin {
  // From dist/zero/vite.js, the shipped bundle is dist/zero-cache.
  const dir = options.dir ?? fileURLToPath(new URL('../zero-cache', import.meta.url))
  const path = (options.path ?? 'zero-cache').replace(/^\/+|\/+$/g, '')
  const check = () => {
    if (!existsSync(join(dir, 'zero-cache.js'))) throw new Error(`tabgres/zero/vite: no zero-cache bundle in ${dir} (npm run build:zero writes one)`)
  }
  return {
    name: 'tabgres-zero-cache-assets',
    generateBundle() {
      check()
      const maps = options.sourceMaps ?? true
      for (const f of files(dir)) {
        if (!maps && f.endsWith('.map')) continue
        let source: Uint8Array | string = readFileSync(join(dir, f))
        // Without its map, a file's closing sourceMappingURL comment would name a file that is not there.
        if (!maps && f.endsWith('.js')) source = source.toString().replace(/\n\/\/# sourceMappingURL=\S+\s*$/, '\n')
        this.emitFile({ type: 'asset', fileName: `${path}/${f}`, source })
      }
    },
    configureServer(server) {
      server.middlewares.use((req, res, next) => {
        const url = new URL(req.url ?? '/', 'http://x')
        const prefix = `${server.config.base.replace(/\/?$/, '/')}${path}/`
        if (!url.pathname.startsWith(prefix)) return next()
        const file = normalize(join(dir, decodeURIComponent(url.pathname.slice(prefix.length))))
        if (!file.startsWith(dir + sep) || !existsSync(file) || !statSync(file).isFile()) return next()
        res.setHeader('Content-Type', TYPES[file.slice(file.lastIndexOf('.'))] ?? 'application/octet-stream')
        createReadStream(file).pipe(res)
      })
    },
  }
}
