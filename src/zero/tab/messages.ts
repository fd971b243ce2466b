// What the page and zero-cache's worker say to each other (start.ts and
// worker.ts). Structured clones on the worker's own port.

/** Page → worker, once: everything zero-cache needs to start. */
export interface StartMessage {
  type: 'start'
  /** zero-cache's configuration (ZERO_* variables), as its process environment. */
  env: Record<string, string>
  /** IndexedDB name of the store that keeps the replica's files. */
  replicaStore: string
  /**
   * One connector per database port named in env's connection strings: the
   * worker posts a `ConnectRequest` on it for each connection zero-cache
   * opens, and the page answers with a wire-protocol port of that database
   * (`Database.connect()`).
   */
  connectors: Record<number, MessagePort>
  /**
   * The app's endpoints zero-cache calls (ZERO_MUTATE_URL, ZERO_QUERY_URL),
   * by origin: zero-cache's fetch to one goes to its port (endpoints.ts).
   */
  endpoints: Record<string, MessagePort>
}

/** Page → worker: stop zero-cache as SIGTERM does (it drains, then exits). */
export interface StopMessage {
  type: 'stop'
}

/** Page → worker: a read-only query of the replica (SQLite), answered by a `rows` event. */
export interface ReplicaQuery {
  type: 'query'
  id: number
  sql: string
}

export interface ConnectRequest {
  id: number
  /** The Web Lock the worker holds while it uses the connection: the session ends when it is free (Database.connect's `holder`). */
  holder: string
}

export type ConnectReply = { id: number; port: MessagePort } | { id: number; error: { message: string; code?: string } }

/**
 * Page → worker: a WebSocket of the page's Zero client, to zero-cache's
 * port; `port` carries it (SocketFrame both ways, web-socket.ts and
 * sockets.ts).
 */
export interface SocketOpen {
  type: 'socket'
  /** The path and query the client asked for (/sync/v51/connect?...). */
  path: string
  protocols: string[]
  port: MessagePort
}

/** One WebSocket's traffic on its port: the browser WebSocket's events one way, send/close the other. */
export type SocketFrame =
  | { type: 'open'; protocol: string }
  | { type: 'message'; data: string | ArrayBuffer }
  | { type: 'close'; code: number; reason: string; wasClean: boolean }
  | { type: 'error'; message: string }
  | { type: 'send'; data: string | ArrayBuffer }
  | { type: 'end'; code?: number; reason?: string }

/** Worker → page. */
export type WorkerEvent =
  | { type: 'ready' }
  | { type: 'exit'; code: number }
  | { type: 'error'; message: string; code?: string; stack?: string }
  | { type: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; text: string }
  /** The replica's files changed, and the change is kept in IndexedDB. */
  | { type: 'replica-changed' }
  | { type: 'rows'; id: number; rows: Record<string, unknown>[] }
  | { type: 'query-error'; id: number; message: string; code?: string }

/** What of an error crosses to the other side: its message and SQLSTATE (a structured clone would drop `code`). */
export function errorFields(e: unknown): { message: string; code?: string } {
  return { message: String((e as Error)?.message ?? e), code: (e as { code?: string })?.code }
}
