// Change-log pruning: the change log is tabgres's WAL for logical decoding,
// and like PostgreSQL's WAL it is kept only while a slot still needs it.
//
// The horizon is the lowest confirmed_flush_lsn over all slots: every
// transaction committed at or below it has been acknowledged by every
// consumer and can never be streamed again (START_REPLICATION starts above
// confirmed_flush_lsn). A transaction is removed whole or not at all, so an
// acknowledgement that lands inside a transaction keeps all of it.
//
// Without any slot, PostgreSQL keeps no WAL for decoding and a new slot starts
// at the current position, so nothing needs keeping ('discard'). The orez
// ancestor's API (getChangesSince) reads the change log without slots, so
// installChangeTracking keeps it by default ('keep').
//
// PGlite runs no autovacuum (single-user mode): pruning VACUUMs the tables it
// deleted from, so their pages are reused and storage stays bounded.

import type { PGlite } from '@electric-sql/pglite'
import type { Lsn } from '../../protocol/lsn'
import { backendOf } from '../backend/backend'
import { idle, type IdleSession } from './exclusive'
import { subscribeCommits } from './notifier'
import { seqAtOrBelow } from './positions'
import { readPosition, resumePoint } from './reader'
import { SerialRuns } from '../serial-runs'

/** What happens to captured changes while no replication slot exists. */
export type Retention = 'keep' | 'discard'

export interface PruneResult {
  /** Changes at or below this sequence number are gone (-1: nothing pruned). */
  cut: bigint
  changes: number
  transactions: number
  slots: number
}

/**
 * The newest sequence number that no slot needs, or null when nothing may be
 * pruned. `minConfirmed` is null when there is no slot.
 */
export function pruneHorizon(minConfirmed: Lsn | null, position: bigint, retention: Retention): bigint | null {
  if (minConfirmed === null) return retention === 'discard' ? position : null
  return seqAtOrBelow(minConfirmed)
}

/**
 * Prune once; runs between application transactions (see ./exclusive.ts).
 * `slots` is the slot store's state: the lowest confirmed position and the count.
 */
export async function pruneChangeLog(
  s: IdleSession,
  retention: Retention,
  slots: { minConfirmed: Lsn | null; count: number },
): Promise<PruneResult> {
  const horizon = pruneHorizon(slots.minConfirmed, await readPosition(s), retention)
  if (horizon === null || horizon < 0n) return { cut: -1n, changes: 0, transactions: 0, slots: slots.count }
  // Never cut through a transaction: stop before the first one that ends above the horizon.
  const cut = await resumePoint(s, horizon)
  const [[changes, transactions]] = await s.query(`
    -- The cut is a transaction boundary, so no statement's run straddles it;
    -- the first_seq bound lets the delete use the index.
    WITH c AS (DELETE FROM _tabgres.statement_changes
                WHERE first_seq <= ${cut} AND first_seq + n - 1 <= ${cut} RETURNING n),
         x AS (DELETE FROM _tabgres.xacts WHERE last_seq <= ${cut} RETURNING 1),
         -- A reader at any position above the cut needs, per relation, only the
         -- newest shape written at or below it (and likewise for publications).
         r AS (DELETE FROM _tabgres.relation_versions v USING _tabgres.relation_versions w
                WHERE w.relid = v.relid AND w.valid_after <= ${cut}
                  AND (w.valid_after, w.id) > (v.valid_after, v.id) RETURNING 1),
         p AS (DELETE FROM _tabgres.publication_versions v USING _tabgres.publication_versions w
                WHERE w.valid_after <= ${cut} AND (w.valid_after, w.id) > (v.valid_after, v.id) RETURNING 1)
    SELECT (SELECT COALESCE(sum(n), 0) FROM c), (SELECT count(*) FROM x), (SELECT count(*) FROM r), (SELECT count(*) FROM p)`)
  if (Number(changes) + Number(transactions) > 0) {
    await s.query('VACUUM _tabgres.statement_changes, _tabgres.xacts')
  }
  return { cut, changes: Number(changes), transactions: Number(transactions), slots: slots.count }
}

/** What pruning needs of the slot store: the lowest confirmed position and how many slots there are. */
export function slotHorizon(db: PGlite): { minConfirmed: Lsn | null; count: number } {
  const store = backendOf(db).slots
  return { minConfirmed: store.minConfirmed(), count: store.list().length }
}

/** Commits that may arrive before a no-slot prune runs (they are pruned together). */
const COMMIT_PRUNE_DELAY_MS = 100

class Pruner {
  private readonly runs = new SerialRuns(() =>
    idle(this.db, (s) => {
      // Read inside the idle turn: a slot created or confirmed meanwhile counts.
      return pruneChangeLog(s, this.retention, slotHorizon(this.db)).then((r) => {
        // The messages kept in files (./message-files.ts) go with the changes around them.
        backendOf(this.db).messages.prune(r.cut)
        return r
      })
    }, true).then(
      (r) => {
        this.slots = r.slots
        this.last = r
        return r
      },
      (e) => {
        this.lastError = e
        throw e
      },
    ),
  )
  private timer: ReturnType<typeof setTimeout> | null = null
  /** Set by stop(): no prune starts after it. */
  private stopped = false
  /** Slot count seen by the last prune: with slots, commits alone never move the horizon. */
  private slots = -1
  unsubscribe: () => void = () => {}
  last: PruneResult | null = null
  lastError: unknown = null

  constructor(
    private readonly db: PGlite,
    readonly retention: Retention,
  ) {}

  /** Prune after anything already running; resolves with this prune's result. */
  request(): Promise<PruneResult> {
    return this.runs.request()
  }

  /** A prune nobody awaits: its error is kept for diagnostics, not thrown. */
  background(): void {
    if (this.stopped || !this.db.ready) return
    this.request().catch(() => {})
  }

  /** After a commit: only without slots can a commit make changes prunable. */
  onCommit(): void {
    if (this.retention !== 'discard' || this.slots > 0 || this.timer) return
    this.timer = setTimeout(() => {
      this.timer = null
      this.background()
    }, COMMIT_PRUNE_DELAY_MS)
  }

  /** No more prunes; resolves once a running one has finished. */
  stop(): Promise<void> {
    this.stopped = true
    this.unsubscribe()
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    return this.runs.settled()
  }
}

const pruners = new WeakMap<PGlite, Pruner>()

/**
 * Starts pruning for a database (idempotent): after acknowledgements and slot
 * drops, and with retention 'discard' also after commits while no slot exists.
 */
export async function startPruning(db: PGlite, retention: Retention): Promise<void> {
  const existing = pruners.get(db)
  if (existing && existing.retention === retention) return
  void existing?.stop()
  const p = new Pruner(db, retention)
  pruners.set(db, p)
  p.unsubscribe = await subscribeCommits(db, () => p.onCommit())
  p.background()
}

/**
 * Stops pruning before the database closes and waits for a prune in
 * progress: a query issued into a closing PGlite never returns.
 */
export async function stopPruning(db: PGlite): Promise<void> {
  const p = pruners.get(db)
  pruners.delete(db)
  await p?.stop()
}

/** Prune now and resolve with what was removed (null when pruning was never started). */
export function pruneNow(db: PGlite): Promise<PruneResult> | null {
  return pruners.get(db)?.request() ?? null
}

/** Ask for a prune in the background (after an acknowledgement or a slot drop). */
export function schedulePrune(db: PGlite): void {
  pruners.get(db)?.background()
}

/** Diagnostics: the last prune's result and error. */
export function pruneStatus(db: PGlite): { last: PruneResult | null; lastError: unknown } | null {
  const p = pruners.get(db)
  return p ? { last: p.last, lastError: p.lastError } : null
}
