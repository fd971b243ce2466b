// What a browser tab cannot do: processes, TLS, DNS, a terminal, the
// inspector. zero-cache reaches these only on paths the tab's configuration
// turns off (litestream backups, TLS upstreams, profiling); if one is reached
// anyway it fails with a named error instead of doing something else.

export function unavailable(what: string): never {
  throw Object.assign(new Error(`${what} is not available in a browser tab (tabgres runs zero-cache in a worker of the page)`), { code: 'ERR_TABGRES_UNAVAILABLE_IN_TAB' })
}
const thrower = (what: string) => () => unavailable(what)

// node:child_process
export const fork = thrower('child_process.fork')
export const spawn = thrower('child_process.spawn')
export const spawnSync = thrower('child_process.spawnSync')
export const exec = thrower('child_process.exec')
export const execSync = thrower('child_process.execSync')
export const execFile = thrower('child_process.execFile')
export const execFileSync = thrower('child_process.execFileSync')
export class ChildProcess {
  constructor() {
    unavailable('child_process.ChildProcess')
  }
}

// node:tls, node:https, node:http2
export const connect = thrower('TLS (tls.connect)')
export const createSecureContext = thrower('TLS (tls.createSecureContext)')
export const createServer = thrower('this server (https, http2 or tls)')
export const request = thrower('https.request')
export const get = thrower('https.get')
export const checkServerIdentity = thrower('tls.checkServerIdentity')
export const rootCertificates: string[] = []
export const DEFAULT_MIN_VERSION = 'TLSv1.2'
export const DEFAULT_MAX_VERSION = 'TLSv1.3'
export const constants = {}
export class Agent {}
export const globalAgent = new Agent()
export class TLSSocket {
  constructor() {
    unavailable('tls.TLSSocket')
  }
}
export class Http2ServerRequest {}
export class Http2ServerResponse {}
export const createSecureServer = thrower('http2.createSecureServer')

// node:dns
export const lookup = (host: string, opts: unknown, cb?: (e: Error | null, address?: string, family?: number) => void) => {
  const callback = (typeof opts === 'function' ? opts : cb) as (e: Error | null, address?: string, family?: number) => void
  // Every host is this worker (net.ts): answer as a resolver that knows only loopback.
  queueMicrotask(() => callback(null, '127.0.0.1', 4))
}
export const promises = { lookup: async () => ({ address: '127.0.0.1', family: 4 }) }
export const resolve = thrower('dns.resolve')
export const setDefaultResultOrder = () => {}

// node:readline, node:tty
export const createInterface = thrower('readline.createInterface')
export const emitKeypressEvents = () => {}
export const clearLine = () => true
export const cursorTo = () => true
export const moveCursor = () => true
export const isatty = () => false
export class ReadStream {}
export class WriteStream {}

// node:inspector, node:inspector/promises
export class Session {
  connect(): never {
    return unavailable('the inspector (heap snapshots, CPU profiles)')
  }
  post(): never {
    return unavailable('the inspector (heap snapshots, CPU profiles)')
  }
  disconnect(): void {}
}
export const open = thrower('the inspector')
export const url = () => undefined

export default {
  fork, spawn, spawnSync, exec, execSync, execFile, execFileSync, ChildProcess,
  connect, createSecureContext, createServer, request, get, checkServerIdentity, rootCertificates, DEFAULT_MIN_VERSION, DEFAULT_MAX_VERSION, constants, Agent, globalAgent, TLSSocket,
  lookup, promises, resolve, setDefaultResultOrder, createInterface, emitKeypressEvents, clearLine, cursorTo, moveCursor, isatty, ReadStream, WriteStream, Session, open, url,
}
