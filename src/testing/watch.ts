// Waiting on a replication stream in a test: for its next transaction, or
// until it has delivered a position. The stream is read once, in the
// background (client/replicate.ts: each Commit acknowledged once recorded);
// every wait has a limit and says what it waited for when it runs out.

import { replicate } from '../client/replicate'
import type { ReplicationStream } from '../client/stream'
import { formatLsn, parseLsn, type Lsn } from '../protocol/lsn'
import type { PgoutputMessage } from '../protocol/pgoutput'

type Begin = Extract<PgoutputMessage, { tag: 'B' }>
type Commit = Extract<PgoutputMessage, { tag: 'C' }>

/** A whole transaction as the stream carried it. */
export interface WatchedTransaction {
  begin: Begin
  /** Everything between Begin and Commit, in order (Relation, Insert, Update, ...). */
  messages: PgoutputMessage[]
  commit: Commit
}

export interface StreamWatch {
  /** Every transaction received so far, in order. */
  readonly transactions: readonly WatchedTransaction[]
  /** The next transaction this method has not yet returned (one already received resolves at once). */
  nextCommit(timeoutMs?: number): Promise<WatchedTransaction>
  /** Resolves once everything up to `lsn` has been received (e.g. pg_current_wal_lsn() after a write). */
  until(lsn: Lsn | string, timeoutMs?: number): Promise<void>
  /** Ends the stream (CopyDone); resolves when it has ended. */
  close(): Promise<void>
}

const DEFAULT_TIMEOUT_MS = 10_000

export function watchStream(stream: ReplicationStream): StreamWatch {
  const transactions: WatchedTransaction[] = []
  let returned = 0
  let applied: Lsn = 0n
  let ended = false
  let failure: unknown = null
  const waiters = new Set<() => void>()
  const wake = () => {
    for (const w of [...waiters]) w()
  }
  let begin: Begin | null = null
  let messages: PgoutputMessage[] = []
  const done = replicate(
    stream,
    (m) => {
      if (m.tag === 'B') {
        begin = m
        messages = []
      } else if (m.tag === 'C') {
        if (begin) transactions.push({ begin, messages, commit: m })
        begin = null
      } else messages.push(m)
    },
    {
      onApplied(lsn) {
        if (lsn > applied) applied = lsn
        wake()
      },
    },
  ).then(
    () => {
      ended = true
      wake()
    },
    (e) => {
      ended = true
      failure = e
      wake()
    },
  )

  /** Waits for `ready` to return a value, re-checked after each event; rejects at the limit or the stream's end. */
  function wait<T>(what: string, timeoutMs: number, ready: () => T | undefined): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const v = ready()
        if (v !== undefined) return finish(() => resolve(v))
        if (ended) finish(() => reject(failure ?? new Error(`the stream ended before ${what}`)))
      }
      const timer = setTimeout(() => finish(() => reject(new Error(`no ${what} within ${timeoutMs} ms (received up to ${formatLsn(applied)})`))), timeoutMs)
      const finish = (settle: () => void) => {
        clearTimeout(timer)
        waiters.delete(check)
        settle()
      }
      waiters.add(check)
      check()
    })
  }

  return {
    transactions,
    nextCommit(timeoutMs = DEFAULT_TIMEOUT_MS) {
      return wait('next transaction', timeoutMs, () => (returned < transactions.length ? transactions[returned++] : undefined))
    },
    until(lsn, timeoutMs = DEFAULT_TIMEOUT_MS) {
      const target = typeof lsn === 'bigint' ? lsn : parseLsn(lsn)
      if (target === null) return Promise.reject(new Error(`invalid LSN "${String(lsn)}"`))
      return wait(`position ${formatLsn(target)}`, timeoutMs, () => (applied >= target ? true : undefined)).then(() => {})
    },
    async close() {
      await stream.close()
      await done
    },
  }
}
