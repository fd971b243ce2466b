// `tabgres/zero`: zero-cache in a worker of the page, on tabgres databases of
// the same page. The bundle it runs (dist/zero-cache) is served with the app:
// `tabgres/zero/vite` adds it to a Vite build.

export { EXIT_SUSPENDED, startZeroCache, type ZeroCache, type ZeroCacheOptions } from './start'
export { routeWebSockets } from './web-socket'
export { zeroTabgres } from './server'
