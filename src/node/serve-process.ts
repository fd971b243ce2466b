// `npm run serve` as a child process, for the commands and tests that start
// tabgres next to another program (zero-cache): the same server a user runs,
// in its own process, so it can be stopped or killed like one.

import { spawn, type ChildProcess } from 'node:child_process'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { supervise } from './child-output'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

export interface ServeOptions {
  /** A directory, or 'memory'. */
  data: string
  databases: string[]
  /** 0 picks a free one. */
  port?: number
  password?: string
  logStatements?: boolean
  onLine?: (line: string) => void
}

export interface ServeProcess {
  readonly process: ChildProcess
  /** The port once every database accepts connections. */
  readonly ready: Promise<number>
  readonly exited: Promise<number | string>
  url(database: string): string
  /** SIGTERM (fast shutdown), then the exit. */
  stop(): Promise<number | string>
}

const LISTENING = /^tabgres listening on postgresql:\/\/\S+@([\d.]+):(\d+)\/(\S+)/

export function startServe(o: ServeOptions): ServeProcess {
  // tsx's loader in this process (resolved from the project, the cwd) rather
  // than its CLI, which would run the server in a grandchild: the PID here is
  // the server's own.
  const args = ['--import', 'tsx', join(root, 'src/node/serve.ts'), '--data', o.data, '--port', String(o.port ?? 0)]
  for (const db of o.databases) args.push('--db', db)
  if (o.password !== undefined) args.push('--password', o.password)
  if (o.logStatements) args.push('--log-statements')
  const child = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] })
  const pending = new Set(o.databases)
  let port = 0
  let markReady!: (port: number) => void
  let failReady!: (e: Error) => void
  const ready = new Promise<number>((res, rej) => ((markReady = res), (failReady = rej)))
  ready.catch(() => {})
  const out = supervise(child, (line) => {
    o.onLine?.(line)
    const m = LISTENING.exec(line)
    if (m) {
      port = Number(m[2])
      pending.delete(m[3])
      if (pending.size === 0) markReady(port)
    }
  })
  void out.exited.then((c) => failReady(new Error(`npm run serve exited (${c}) before it was ready; its last lines:\n${out.lastLines()}`)))
  return {
    process: child,
    ready,
    exited: out.exited,
    url: (database) => {
      const auth = o.password !== undefined ? `postgres:${encodeURIComponent(o.password)}` : 'postgres'
      return `postgresql://${auth}@127.0.0.1:${port}/${database}`
    },
    stop: out.stop,
  }
}
