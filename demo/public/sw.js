// The playground's service worker: after the first visit the whole app (the
// page, its scripts, the database worker, the replica worker, PGlite's wasm
// and data files) comes from Cache Storage, so the page works offline.
//
// install: cache every file the build listed in precache.json (written by
//   demo/vite.config.ts after the build; the page's own first fetches happen
//   before this worker controls it, so they cannot be caught at runtime).
// fetch: pages network-first (a new build shows up when online), everything
//   else cache-first (built file names carry content hashes).

const CACHE = 'tabgres-demo'

self.addEventListener('install', (event) => {
  event.waitUntil(
    (async () => {
      const res = await fetch('./precache.json', { cache: 'no-store' })
      if (!res.ok) throw new Error(`precache.json: HTTP ${res.status}`)
      const { files } = await res.json()
      const cache = await caches.open(CACHE)
      await cache.addAll(files.map((f) => new Request(f, { cache: 'reload' })))
      await self.skipWaiting()
    })(),
  )
})

self.addEventListener('activate', (event) => {
  event.waitUntil(self.clients.claim())
})

async function networkFirst(request) {
  const cache = await caches.open(CACHE)
  try {
    const res = await fetch(request)
    if (res.ok) await cache.put('./', res.clone())
    return res
  } catch (e) {
    const cached = await cache.match('./')
    if (cached) return cached
    throw e
  }
}

async function cacheFirst(request) {
  const cache = await caches.open(CACHE)
  const cached = await cache.match(request, { ignoreSearch: true })
  if (cached) return cached
  const res = await fetch(request)
  if (res.ok && res.type === 'basic') await cache.put(request, res.clone())
  return res
}

self.addEventListener('fetch', (event) => {
  const { request } = event
  if (request.method !== 'GET' || new URL(request.url).origin !== self.location.origin) return
  event.respondWith(request.mode === 'navigate' ? networkFirst(request) : cacheFirst(request))
})
