// A Vite plugin that makes the dev server and `vite preview` send
// Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy on every
// response: 200s, 304s, 404s and errors alike.
//
// Why not `server.headers` / `preview.headers`: Vite applies them only where a
// body is sent. Its static files go through sirv, which answers a matching
// If-None-Match with `writeHead(304)` before it calls the `setHeaders` hook
// that carries those headers (node_modules/sirv/build.mjs; Vite's bundled copy
// in node_modules/vite/dist/node/chunks/node.js, used by preview's
// viteAssetMiddleware and the dev server's public, static and /@fs/
// middlewares). Its own `send()` (HTML pages, transformed modules) and the dev
// server's cachedTransformMiddleware answer 304 before setting them too, and
// its 404 and error answers never set them. WebKit fails a module worker's
// load with a bare error event when a 304 lacks them: a page reloaded with a
// warm cache never starts its database worker.
//
// So the headers go on the response first, before anything else looks at the
// request. Nothing later removes them: Node merges writeHead's headers with
// those set before.
//
// Cross-Origin-Resource-Policy is left out: require-corp asks it only of
// cross-origin subresources, and everything these servers send is loaded
// from their own origin.

import type { EventEmitter } from 'node:events'
import type { Plugin, PreviewServer, ViteDevServer } from 'vite'

export const CROSS_ORIGIN_ISOLATION: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
}

function isolate(_req: unknown, res: { setHeader(name: string, value: string): unknown }): void {
  for (const [name, value] of Object.entries(CROSS_ORIGIN_ISOLATION)) res.setHeader(name, value)
}

function install(server: ViteDevServer | PreviewServer): void {
  // A listener of the HTTP server's own, ahead of Vite's app: it runs before
  // every middleware, the host check and CORS answers Vite puts ahead of the
  // plugins' included. In middleware mode there is no server of Vite's: the
  // first middleware after those is as early as a plugin gets.
  if (server.httpServer) (server.httpServer as EventEmitter).prependListener('request', isolate)
  else server.middlewares.use((req, res, next) => (isolate(req, res), next()))
}

export function crossOriginIsolation(): Plugin {
  return {
    name: 'tabgres-cross-origin-isolation',
    configureServer: install,
    configurePreviewServer: install,
  }
}
