// The page's side of zero-cache in the tab: `startZeroCache` spawns its
// worker (the bundle scripts/build-zero.ts makes from worker.ts) and answers
// its connection requests with wire-protocol ports of tabgres databases.

import type { Database } from '../../client/index'
import { onPageLifecycle } from '../../client/lifecycle'
import { serveEndpoint } from './endpoints'
import { errorFields, type ConnectReply, type ConnectRequest, type StartMessage, type WorkerEvent } from './messages'
import { routeWebSockets } from './web-socket'

export interface ZeroCacheOptions {
  /** The upstream: zero-cache replicates from it. */
  upstream: Database
  /** zero-cache's client view records; the upstream if not given. */
  cvr?: Database
  /** zero-cache's change log; the upstream if not given. */
  change?: Database
  /** The URL of the bundle's entry, zero-cache.js (dist/zero-cache/ after `npm run build:zero`). */
  url: string | URL
  /** IndexedDB name under which the replica's files are kept; a reload with the same name resumes without a full resync. */
  replicaStore?: string
  /** More ZERO_* settings (zero-cache's own names). */
  env?: Record<string, string>
  /**
   * The origin a Zero client in this page names as its `server`: WebSockets
   * to it reach this zero-cache over a MessagePort (web-socket.ts). Default
   * http://zero.tabgres.localhost.
   */
  server?: string
  /** Where zero-cache's own log lines go (each line as it printed it); the worker's console if not given. */
  onLog?: (level: string, text: string) => void
  /**
   * The app's push endpoint for custom mutators (what ZERO_MUTATE_URL names
   * on a server), served in the page: zero-cache's requests to it come here.
   * Typically `(request) => new PushProcessor(zeroTabgres(schema, db)).process(mutators, request)`
   * wrapped as a JSON Response (server.ts).
   */
  mutate?: (request: Request) => Promise<Response>
  /** The app's endpoint for synced queries (what ZERO_QUERY_URL names on a server), served in the page. */
  query?: (request: Request) => Promise<Response>
}

export interface ZeroCache {
  /** What to give a Zero client as `server` (ZeroCacheOptions.server). */
  readonly server: string
  /** Settles once zero-cache serves sync requests (its port is listening), or fails if it stopped first. */
  readonly ready: Promise<void>
  /** Settles with zero-cache's exit code ({@link EXIT_SUSPENDED}: ended as the page entered the back/forward cache). */
  readonly exited: Promise<number>
  /** The worker, for a Zero client's transport. */
  readonly worker: Worker
  /** Stops zero-cache as SIGTERM does and waits for it to exit (at most `timeoutMs`, then ends its worker). */
  stop(timeoutMs?: number): Promise<number>
  /** Reads the replica (zero-cache's SQLite) with a read-only query. */
  queryReplica<T = Record<string, unknown>>(sql: string): Promise<T[]>
  /** Calls `fn` each time the replica's files change (and the change is kept); returns an unsubscribe. */
  onReplicaChange(fn: () => void): () => void
}

/**
 * `exited`'s code when the page entered the back/forward cache (or froze):
 * zero-cache's worker was ended there, so that its replica store's Web Lock
 * does not keep the next page's zero-cache waiting while this page sits
 * frozen. Its databases' links end the same way (client/leadership.ts). The
 * replica is kept: start a new one when the page is shown again (`pageshow`
 * with `persisted`), and it resumes without a resync.
 */
export const EXIT_SUSPENDED = -2

/** Ports inside the worker's loopback network; each leads to one database. */
const UPSTREAM_PORT = 5432
const CVR_PORT = 5433
const CHANGE_PORT = 5434

/** Origins of the page's endpoints: .localhost names never leave the machine, and these never leave the tab. */
const MUTATE_ORIGIN = 'http://mutate.tabgres.localhost'
const QUERY_ORIGIN = 'http://query.tabgres.localhost'

function serveConnections(db: Database): MessagePort {
  const { port1, port2 } = new MessageChannel()
  port1.onmessage = async ({ data }: MessageEvent<ConnectRequest>) => {
    try {
      const port = await db.connect({ holder: data.holder })
      port1.postMessage({ id: data.id, port } satisfies ConnectReply, [port])
    } catch (e) {
      port1.postMessage({ id: data.id, error: errorFields(e) } satisfies ConnectReply)
    }
  }
  return port2
}

export function startZeroCache(options: ZeroCacheOptions): ZeroCache {
  const worker = new Worker(options.url, { type: 'module', name: 'zero-cache' })
  const dbs: [number, Database][] = [[UPSTREAM_PORT, options.upstream]]
  if (options.cvr) dbs.push([CVR_PORT, options.cvr])
  if (options.change) dbs.push([CHANGE_PORT, options.change])
  // Each tabgres database is one PostgreSQL database called postgres; the port says which.
  const url = (port: number) => `postgres://postgres@127.0.0.1:${port}/postgres`
  const connectors = Object.fromEntries(dbs.map(([port, db]) => [port, serveConnections(db)]))
  const endpoints: Record<string, MessagePort> = {}
  const endpointEnv: Record<string, string> = {}
  if (options.mutate) (endpoints[MUTATE_ORIGIN] = serveEndpoint(options.mutate)), (endpointEnv.ZERO_MUTATE_URL = `${MUTATE_ORIGIN}/mutate`)
  if (options.query) (endpoints[QUERY_ORIGIN] = serveEndpoint(options.query)), (endpointEnv.ZERO_QUERY_URL = `${QUERY_ORIGIN}/query`)
  const env: Record<string, string> = {
    ZERO_UPSTREAM_DB: url(UPSTREAM_PORT),
    ZERO_CVR_DB: url(options.cvr ? CVR_PORT : UPSTREAM_PORT),
    ZERO_CHANGE_DB: url(options.change ? CHANGE_PORT : UPSTREAM_PORT),
    ZERO_REPLICA_FILE: '/zero/replica.db',
    ZERO_PORT: '4848',
    ZERO_NUM_SYNC_WORKERS: '1',
    ZERO_APP_ID: 'zero',
    ZERO_LOG_FORMAT: 'text',
    // zero-cache requires one outside development; its inspector is reachable only from this page.
    ZERO_ADMIN_PASSWORD: crypto.randomUUID(),
    ZERO_ENABLE_TELEMETRY: 'false',
    // Both ends of every websocket are in this page: compressing would only cost time.
    ZERO_WEBSOCKET_COMPRESSION: 'false',
    DO_NOT_TRACK: '1',
    ...endpointEnv,
    ...options.env,
  }
  const message: StartMessage = { type: 'start', env, replicaStore: options.replicaStore ?? 'tabgres-zero-replica', connectors, endpoints }
  let markReady!: () => void
  let failReady!: (e: Error) => void
  const ready = new Promise<void>((res, rej) => ((markReady = res), (failReady = rej)))
  ready.catch(() => {})
  let markExited!: (code: number) => void
  const exited = new Promise<number>((res) => (markExited = res))
  const queries = new Map<number, { resolve: (rows: never[]) => void; reject: (e: Error) => void }>()
  let nextQuery = 1
  const replicaListeners = new Set<() => void>()
  void exited.then(() => {
    for (const q of queries.values()) q.reject(new Error('zero-cache has exited'))
    queries.clear()
  })
  worker.onmessage = ({ data }: MessageEvent<WorkerEvent>) => {
    if (data.type === 'ready') markReady()
    else if (data.type === 'replica-changed') for (const fn of replicaListeners) fn()
    else if (data.type === 'rows' || data.type === 'query-error') {
      const q = queries.get(data.id)
      queries.delete(data.id)
      if (data.type === 'rows') q?.resolve(data.rows as never[])
      else q?.reject(Object.assign(new Error(data.message), { code: data.code }))
    }
    else if (data.type === 'exit') (markExited(data.code), failReady(new Error(`zero-cache exited (${data.code}) before it was ready`)))
    else if (data.type === 'error') failReady(Object.assign(new Error(`zero-cache failed: ${data.message}`), { code: data.code, stack: data.stack }))
    else if (data.type === 'log') (options.onLog ?? ((level, text) => console[level as 'info'](`[zero-cache] ${text}`)))(data.level, data.text)
  }
  worker.onerror = (ev) => failReady(new Error(`zero-cache's worker failed to load: ${ev.message}`))
  worker.postMessage(message, [...Object.values(connectors), ...Object.values(endpoints)])
  const server = options.server ?? 'http://zero.tabgres.localhost'
  const unroute = routeWebSockets(server, worker)
  const lifecycle = new AbortController()
  void exited.then(() => (unroute(), lifecycle.abort()))
  onPageLifecycle(
    {
      suspend: () => {
        worker.terminate()
        failReady(new Error('zero-cache ended: the page entered the back/forward cache'))
        markExited(EXIT_SUSPENDED)
      },
      resume: () => {},
    },
    lifecycle.signal,
  )
  return {
    server,
    ready,
    exited,
    worker,
    queryReplica<T>(sql: string): Promise<T[]> {
      return new Promise<T[]>((resolve, reject) => {
        const id = nextQuery++
        queries.set(id, { resolve: resolve as (rows: never[]) => void, reject })
        worker.postMessage({ type: 'query', id, sql })
      })
    },
    onReplicaChange(fn: () => void) {
      replicaListeners.add(fn)
      return () => replicaListeners.delete(fn)
    },
    async stop(timeoutMs = 10_000) {
      worker.postMessage({ type: 'stop' })
      let timer: ReturnType<typeof setTimeout> | undefined
      const code = await Promise.race([exited, new Promise<number>((res) => (timer = setTimeout(() => res(-1), timeoutMs)))])
      clearTimeout(timer)
      worker.terminate()
      markExited(code)
      return code
    },
  }
}
