// A Vite plugin for builds that run in a browser: PGlite's Emscripten glue
// imports node:module (only inside `if (ENVIRONMENT_IS_NODE)`), and
// @databases/sql, which Zero's client brings, requires fs for sql.file().
// A browser never runs either. Vite would externalize each import with a
// warning per import, burying real warnings; this plugin resolves them to a
// module that fails loudly if something ever does call it.

import type { Plugin } from 'vite'

const PREFIX = '\0tabgres-node-only:'
/** Node built-ins, and the packages that import them on paths a browser never takes. */
const NODE_ONLY = new Map<string, RegExp>([
  ['node:module', /[\\/]node_modules[\\/]@electric-sql[\\/]pglite[\\/]dist[\\/]chunk-[^\\/]+\.js$/],
  ['fs', /[\\/]node_modules[\\/]@databases[\\/]sql[\\/]/],
])

export function nodeOnlyImports(): Plugin {
  return {
    name: 'tabgres-node-only-imports',
    enforce: 'pre',
    resolveId(id, importer) {
      if (importer && NODE_ONLY.get(id)?.test(importer)) return PREFIX + id
      return null
    },
    load(id) {
      if (!id.startsWith(PREFIX)) return null
      const name = JSON.stringify(id.slice(PREFIX.length))
      return [
        `const unavailable = () => { throw new Error(${name} + ' is not available in a browser') }`,
        'export const createRequire = unavailable',
        'export const readFileSync = unavailable',
        'export default { createRequire: unavailable, readFileSync: unavailable }',
      ].join('\n')
    },
  }
}
