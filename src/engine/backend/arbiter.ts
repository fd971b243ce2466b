// Who uses the one backend next, and for how long a session may wait for it.
//
// Every wire session shares PGlite's single backend, so a session that runs a
// statement, or holds a transaction block open, holds the backend: PostgreSQL
// clients expect MVCC instead, where waiting happens only on conflicting
// locks. Waiting for the backend is therefore treated as waiting for a lock,
// and bounded as PostgreSQL bounds lock waits: lock_timeout (55P03),
// statement_timeout (57014), a cancel (57014), the client going away. A
// server-wide bound applies when a session set neither, so that no wait is
// without a limit. Waiters are served first come, first served.
//
// The backend's own transaction lock (PGlite's, also taken by the worker API)
// is what a lease holds: the arbiter asks for it once at a time, on behalf of
// the first live waiter, so API calls and wire sessions interleave fairly.

import { PgError } from '../../protocol/errors'

export interface WaitBounds {
  /** lock_timeout in ms; 0 waits without that bound. */
  lockTimeoutMs: number
  /** When statement_timeout ends the statement (performance.now() time), or Infinity. */
  statementDeadline: number
  /** Aborted when the wait must end at once (cancel, hang-up); its reason is the error. */
  signal?: AbortSignal
}

/** The backend, held until release(). */
export interface Lease {
  readonly pid: number
  release(): void
}

/** Takes the backend's transaction lock; calls granted with the function that gives it back. */
export type LockBackend = (granted: (release: () => void) => void) => void

interface Waiter {
  pid: number
  resolve(lease: Lease): void
  reject(e: PgError): void
  cleanup(): void
  done: boolean
}

export function lockTimeoutError(detail?: string): PgError {
  return new PgError({ code: '55P03', message: 'canceling statement due to lock timeout', detail })
}
export function statementTimeoutError(): PgError {
  return new PgError({ code: '57014', message: 'canceling statement due to statement timeout' })
}
export function cancelError(): PgError {
  return new PgError({ code: '57014', message: 'canceling statement due to user request' })
}

export class Arbiter {
  private readonly queue: Waiter[] = []
  private asking = false
  private holderPid: number | null = null
  private heldSince = 0

  constructor(
    private readonly lock: LockBackend,
    /** The bound on a wait for which the session set no timeout (ms). */
    readonly maxWaitMs: number,
    /** Told who holds the backend from now on (a session's pid, or null when no session does). */
    private readonly onHolder: (pid: number | null) => void = () => {},
  ) {}

  /** The process holding the backend (a wire session's pid), or null. */
  get holder(): number | null {
    return this.holderPid
  }

  /** Sessions waiting for the backend, in order. */
  get waiting(): number[] {
    return this.queue.filter((w) => !w.done).map((w) => w.pid)
  }

  acquire(pid: number, bounds: WaitBounds): Promise<Lease> {
    if (bounds.signal?.aborted) return Promise.reject(bounds.signal.reason)
    return new Promise<Lease>((resolve, reject) => {
      const timers: ReturnType<typeof setTimeout>[] = []
      const waiter: Waiter = {
        pid,
        resolve,
        reject,
        done: false,
        cleanup: () => {
          for (const t of timers) clearTimeout(t)
          bounds.signal?.removeEventListener('abort', onAbort)
        },
      }
      const fail = (e: PgError) => {
        if (waiter.done) return
        waiter.done = true
        waiter.cleanup()
        reject(e)
      }
      const onAbort = () => fail(bounds.signal!.reason)
      bounds.signal?.addEventListener('abort', onAbort)
      const now = performance.now()
      const statementMs = bounds.statementDeadline - now
      const lockMs = bounds.lockTimeoutMs > 0 ? bounds.lockTimeoutMs : Infinity
      // Whichever bound ends first decides the error, as in PostgreSQL.
      if (statementMs <= lockMs && statementMs < Infinity) {
        timers.push(setTimeout(() => fail(statementTimeoutError()), Math.max(0, statementMs)))
      } else if (lockMs < Infinity) {
        timers.push(setTimeout(() => fail(lockTimeoutError(this.holderDetail())), lockMs))
      }
      if (statementMs === Infinity && lockMs === Infinity) {
        timers.push(
          setTimeout(
            () => fail(lockTimeoutError(`${this.holderDetail()} tabgres bounds a wait for the shared backend at ${this.maxWaitMs} ms when neither lock_timeout nor statement_timeout is set.`)),
            this.maxWaitMs,
          ),
        )
      }
      this.queue.push(waiter)
      this.ask()
    })
  }

  private holderDetail(): string {
    const held = this.holderPid === null ? 'the worker API or the engine' : `process ${this.holderPid}`
    return `The database is held by ${held} (for ${Math.round(performance.now() - this.heldSince)} ms); every session shares one backend.`
  }

  /** Ask for the backend's lock for the first live waiter, once at a time. */
  private ask(): void {
    if (this.asking || this.holderPid !== null) return
    this.dropDone()
    if (this.queue.length === 0) return
    this.asking = true
    this.lock((release) => {
      this.asking = false
      this.dropDone()
      const w = this.queue.shift()
      if (!w) {
        // Everyone who asked gave up meanwhile.
        release()
        return
      }
      w.done = true
      w.cleanup()
      this.holderPid = w.pid
      this.heldSince = performance.now()
      this.onHolder(w.pid)
      let released = false
      w.resolve({
        pid: w.pid,
        release: () => {
          if (released) return
          released = true
          this.holderPid = null
          this.onHolder(null)
          release()
          this.ask()
        },
      })
    })
  }

  private dropDone(): void {
    while (this.queue.length && this.queue[0].done) this.queue.shift()
    if (this.queue.some((w) => w.done)) {
      const live = this.queue.filter((w) => !w.done)
      this.queue.length = 0
      this.queue.push(...live)
    }
  }
}
