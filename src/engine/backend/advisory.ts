// The session-level advisory locks of one database, held by the engine per
// session (capture/advisory.sql says why and how SQL reaches them).
// Every change is written to PGlite's MEMFS at once, with the session that
// holds the backend now, so that the next statement's lock functions read
// the truth.

import { ADVISORY_FILE } from '../capture/names'
import type { StoreFs } from '../replication/slot-store'
import { lockTimeoutError, statementTimeoutError, type WaitBounds } from './arbiter'

export type AdvisoryMode = 'exclusive' | 'shared'

interface Held {
  key: string
  pid: number
  mode: AdvisoryMode
  count: number
}

export class AdvisoryLocks {
  private readonly held = new Map<string, Held>()
  private holder: number | null = null
  private readonly waiters = new Set<() => void>()

  constructor(private readonly fs: StoreFs) {
    this.write()
  }

  /** The session that runs SQL from now on (null: the worker API or the engine). */
  setHolder(pid: number | null): void {
    if (this.holder === pid) return
    this.holder = pid
    this.write()
  }

  lock(pid: number, key: string, mode: AdvisoryMode): void {
    const id = `${pid}\0${mode}\0${key}`
    const h = this.held.get(id)
    if (h) h.count++
    else this.held.set(id, { key, pid, mode, count: 1 })
    this.write()
  }

  unlock(pid: number, key: string, mode: AdvisoryMode): void {
    const id = `${pid}\0${mode}\0${key}`
    const h = this.held.get(id)
    if (!h) return
    if (--h.count === 0) this.held.delete(id)
    this.write()
    this.wake()
  }

  /** pg_advisory_unlock_all, or the session ended. */
  unlockAll(pid: number): void {
    let changed = false
    for (const [id, h] of this.held) {
      if (h.pid === pid) {
        this.held.delete(id)
        changed = true
      }
    }
    if (!changed) return
    this.write()
    this.wake()
  }

  /** Keys `pid` holds, for tests and pg_locks-like reports. */
  heldBy(pid: number): { key: string; mode: AdvisoryMode; count: number }[] {
    return [...this.held.values()].filter((h) => h.pid === pid).map(({ key, mode, count }) => ({ key, mode, count }))
  }

  /**
   * Resolves at the next release of any lock; rejects as a lock wait ends in
   * PostgreSQL (lock_timeout 55P03, statement_timeout 57014, the signal's
   * reason), or at `maxWaitMs` when the session set neither timeout.
   */
  waitForRelease(bounds: WaitBounds, maxWaitMs: number): Promise<void> {
    const statementMs = bounds.statementDeadline - performance.now()
    const lockMs = bounds.lockTimeoutMs > 0 ? bounds.lockTimeoutMs : Infinity
    let error = lockTimeoutError()
    let ms = lockMs
    if (statementMs <= lockMs && statementMs < Infinity) {
      error = statementTimeoutError()
      ms = Math.max(0, statementMs)
    } else if (lockMs === Infinity) {
      error = lockTimeoutError(`tabgres bounds a wait for an advisory lock at ${maxWaitMs} ms when neither lock_timeout nor statement_timeout is set.`)
      ms = maxWaitMs
    }
    const stop = new AbortController()
    const timer = setTimeout(() => stop.abort(error), ms)
    const onAbort = () => stop.abort(bounds.signal!.reason)
    bounds.signal?.addEventListener('abort', onAbort)
    return this.released(stop.signal).finally(() => {
      clearTimeout(timer)
      bounds.signal?.removeEventListener('abort', onAbort)
    })
  }

  /** Resolves at the next release of any lock (or when `signal` aborts, with its reason). */
  released(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason)
      const done = () => {
        this.waiters.delete(done)
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      const onAbort = () => {
        this.waiters.delete(done)
        reject(signal!.reason)
      }
      signal?.addEventListener('abort', onAbort)
      this.waiters.add(done)
    })
  }

  private wake(): void {
    for (const w of [...this.waiters]) w()
  }

  private write(): void {
    const dir = ADVISORY_FILE.slice(0, ADVISORY_FILE.lastIndexOf('/'))
    if (!this.fs.analyzePath(dir).exists) this.fs.mkdir(dir)
    this.fs.writeFile(ADVISORY_FILE, JSON.stringify({ holder: this.holder, locks: [...this.held.values()] }))
  }
}
