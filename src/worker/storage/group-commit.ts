// Group commit for PGlite on IndexedDB.
//
// PGlite's idb:// storage keeps the cluster in memory and copies changed file
// ranges to IndexedDB on a flush. Flushing after every statement costs about
// 100 ms each (one IndexedDB transaction); not flushing loses acknowledged
// writes when the tab dies. So the database runs with relaxedDurability (a
// statement returns before any flush) and every write then awaits durable():
// writes that finish while a flush is running share the next one, and each
// resolves only after a flush that began after it committed. A flush holds
// PGlite's locks only while it copies the changed files (memory to memory);
// statements run again while IndexedDB commits the copy.
//
// The same flushes advance a durability gate for replication: a stream never
// carries a commit the primary could still lose (see DurabilityGate).

import type { PGlite } from '@electric-sql/pglite'
import { PgError } from '../../protocol/errors'
import { toPgError } from '../../protocol/errors'
import { run } from '../../engine/replication/exclusive'
import type { DurabilityGate } from '../../engine/replication/session'
import { SerialRuns } from '../../engine/serial-runs'
import { backendOf, hasBackend } from '../../engine/backend/backend'

/**
 * Copies the in-memory cluster's changes for storage; called under PGlite's
 * query lock, and resolves once the copy is taken (the lock is then released).
 * `durable` resolves once that copy is in storage: statements run meanwhile.
 */
export type Flush = () => Promise<{ durable: Promise<void> }>

/** No storage to flush to (in-memory databases, Node tests): durable at commit. */
export const noFlush: Flush = () => Promise.resolve({ durable: Promise.resolve() })

const now = () => performance.timeOrigin + performance.now()

export class GroupCommit implements DurabilityGate {
  /** A flush that began after the caller's commit, shared by every caller meanwhile. */
  private readonly runs = new SerialRuns(() => this.flushOnce())
  private durablePosition = 0n
  /** WAL insert position at the last flush. */
  private flushedWal: string | null = null
  /** The slot file's version at the last flush (slots change outside the WAL). */
  private flushedSlots = -1
  private readonly listeners = new Set<() => void>()
  /** Flushes that wrote to storage, for diagnostics and benchmarks. */
  flushes = 0
  /**
   * When the latest flushes that moved the position completed, newest last:
   * `at` is performance.timeOrigin + performance.now(), a clock a page and
   * its workers share, so a page can time commit-to-frame from the moment a
   * commit became durable (bench/browser). Bounded to the last 256.
   */
  readonly durableAt: { position: bigint; at: number }[] = []

  constructor(
    private readonly db: PGlite,
    private readonly flush: Flush = noFlush,
  ) {}

  /** Resolves once everything committed before this call is durable. */
  durable(): Promise<void> {
    return this.runs.request()
  }

  /**
   * Makes everything committed so far durable without waiting for another
   * session's open transaction: the copy is taken under PGlite's query lock
   * only, at a statement boundary, where the files are as crash-consistent as
   * PostgreSQL's own are at any moment (an open transaction is rolled back at
   * the next load). Walsender commands use it: PostgreSQL makes a new slot
   * durable before CREATE_REPLICATION_SLOT returns, and a client may create
   * the slot while its other connection holds a transaction open, as
   * zero-cache does (an advisory lock, then the slot).
   */
  async durableNow(): Promise<void> {
    await this.flushCopy(() => this.db.runExclusive(() => this.copyLocked()))
  }

  position(): bigint {
    return this.durablePosition
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  private async flushOnce(): Promise<void> {
    // PGlite's transaction lock first: it queues behind the statements already
    // waiting (db.query takes it too), so one flush covers all of them, and it
    // never lands inside an interactive transaction. Then the query lock: no
    // statement runs while files are copied, so the copy lies between
    // statements, and the position read here is exactly what it contains.
    // The locks are released once the copy is taken: statements run while
    // storage writes it (they belong to the next flush).
    await this.flushCopy(() => this.db._runExclusiveTransaction(() => this.db.runExclusive(() => this.copyLocked())))
  }

  private async flushCopy(take: () => Promise<Awaited<ReturnType<GroupCommit['copyLocked']>>>): Promise<void> {
    const copy = await take()
    if (copy.durable) {
      await copy.durable.catch((e) => {
        throw ioError(e)
      })
      this.flushedWal = copy.wal
      this.flushedSlots = copy.slots
      this.flushes++
    }
    const at = now()
    if (copy.position !== null && copy.position > this.durablePosition) {
      this.durablePosition = copy.position
      this.durableAt.push({ position: copy.position, at })
      if (this.durableAt.length > 256) this.durableAt.shift()
      for (const fn of this.listeners) fn()
    }
  }

  /**
   * Under both locks: reads the position and, if anything was written since
   * the last flush, takes the copy; `durable` (null: nothing to write)
   * resolves once that copy is in storage.
   */
  private async copyLocked(): Promise<{ position: bigint | null; wal: string | null; slots: number; durable: Promise<void> | null }> {
    // (In a failed transaction block the read fails: then flush regardless.)
    const r = await run(this.db, 'SELECT _tabgres.position(), pg_catalog.pg_current_wal_insert_lsn()::text', false).catch(() => null)
    const [position, wal] = r?.sets[0]?.[0] ?? [null, null]
    const pos = r?.status === 'I' ? BigInt(position!) : null
    // Every durable change writes WAL, except the slot file (written by the
    // engine, outside any transaction): an unchanged WAL position and slot
    // file mean nothing to copy (reads, and writes a previous flush took).
    const slots = hasBackend(this.db) ? backendOf(this.db).slots.version : 0
    if (wal !== null && wal === this.flushedWal && slots === this.flushedSlots) return { position: pos, wal, slots, durable: null }
    try {
      return { position: pos, wal, slots, durable: (await this.flush()).durable }
    } catch (e) {
      throw ioError(e)
    }
  }
}

function ioError(e: unknown): PgError {
  return new PgError({
    code: '58030', // io_error
    message: `could not write the database to IndexedDB: ${toPgError(e).message}`,
    hint: 'The change is committed in memory but not yet durable; free storage space and retry.',
  })
}
