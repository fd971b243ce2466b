// `node:process` (and the `process` global) for zero-cache in a worker of the
// page. zero-cache reads its configuration from `process.env`, listens for
// SIGTERM/SIGINT to drain, and ends with `process.exit`; the host (../tab)
// fills `env` before starting it and learns of an exit from the 'exit' event
// (zero-cache in one process emits it rather than calling exit).

import { EventEmitter } from './events'

class Process extends EventEmitter {
  env: Record<string, string | undefined> = {}
  argv = ['node', 'zero-cache']
  execArgv: string[] = []
  argv0 = 'node'
  execPath = '/node'
  title = 'zero-cache'
  pid = 1
  ppid = 0
  platform = 'linux'
  arch = 'wasm32'
  // zero-cache and its dependencies check the major version of the runtime they were written for.
  version = 'v22.0.0'
  versions: Record<string, string> = { node: '22.0.0' }
  release = { name: 'node' }
  exitCode: number | undefined = undefined
  /** Undefined, as in a process that was not forked: zero-cache then runs as the top process. */
  send = undefined
  connected = false
  stdout = { write: (s: string) => (console.log(String(s).replace(/\n$/, '')), true), isTTY: false, columns: 80 }
  stderr = { write: (s: string) => (console.error(String(s).replace(/\n$/, '')), true), isTTY: false, columns: 80 }
  stdin = undefined
  #start = performance.now()

  cwd(): string {
    return '/'
  }
  chdir(): void {}
  umask(): number {
    return 0o22
  }
  uptime(): number {
    return (performance.now() - this.#start) / 1000
  }
  hrtime = Object.assign(
    (prev?: [number, number]): [number, number] => {
      const ns = this.hrtime.bigint()
      let s = Number(ns / 1_000_000_000n)
      let n = Number(ns % 1_000_000_000n)
      if (prev) {
        s -= prev[0]
        n -= prev[1]
        if (n < 0) (s--, (n += 1e9))
      }
      return [s, n]
    },
    { bigint: (): bigint => BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6)) },
  )
  memoryUsage = Object.assign(
    () => {
      const heap = (performance as { memory?: { usedJSHeapSize: number; totalJSHeapSize: number } }).memory
      return { rss: heap?.totalJSHeapSize ?? 0, heapTotal: heap?.totalJSHeapSize ?? 0, heapUsed: heap?.usedJSHeapSize ?? 0, external: 0, arrayBuffers: 0 }
    },
    { rss: () => 0 },
  )
  cpuUsage(): { user: number; system: number } {
    return { user: Math.round(performance.now() * 1000), system: 0 }
  }
  resourceUsage(): Record<string, number> {
    return { maxRSS: 0 }
  }
  nextTick(fn: (...args: unknown[]) => void, ...args: unknown[]): void {
    queueMicrotask(() => fn(...args))
  }
  emitWarning(warning: string | Error, ...rest: unknown[]): void {
    const w = typeof warning === 'string' ? warning : warning.message
    if (!this.emit('warning', warning, ...rest)) console.warn(`(zero-cache) warning: ${w}`)
  }
  kill(pid: number, signal: string | number = 'SIGTERM'): boolean {
    if (pid !== this.pid) throw Object.assign(new Error(`kill ESRCH`), { code: 'ESRCH' })
    this.emit(String(signal), String(signal))
    return true
  }
  /**
   * Ends zero-cache: nothing after it runs in a real process, so this throws
   * after emitting 'exit' (the host then stops the worker).
   */
  exit(code?: number): never {
    const c = code ?? this.exitCode ?? 0
    this.exitCode = c
    this.emit('exit', c)
    throw new ProcessExit(c)
  }
  binding(): never {
    throw new Error('process.binding is not available in a browser tab')
  }
  getuid(): number {
    return 0
  }
  getgid(): number {
    return 0
  }
  setUncaughtExceptionCaptureCallback(): void {}
  hasUncaughtExceptionCaptureCallback(): boolean {
    return false
  }
  get features(): Record<string, boolean> {
    return { inspector: false, tls: false, ipv6: true }
  }
}

/** Thrown by `process.exit` so that no code after it runs. */
export class ProcessExit extends Error {
  constructor(readonly code: number) {
    super(`process.exit(${code})`)
    this.name = 'ProcessExit'
  }
}

export const process = new Process()
export default process
export const { env, argv, pid, platform, versions, version, hrtime, nextTick, memoryUsage } = process
export const cwd = process.cwd.bind(process)
export const exit = process.exit.bind(process)
export const emitWarning = process.emitWarning.bind(process)
export const on = process.on.bind(process)
export const once = process.once.bind(process)
export const off = process.off.bind(process)
