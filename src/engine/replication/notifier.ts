// The commit signal: the capture's commit trigger NOTIFYs with the
// transaction's last sequence number, PostgreSQL delivers the notification
// only after the transaction commits, and PGlite hands it to us right after
// the committing query returns. One LISTEN per database serves every session.
//
// The payloads also keep the committed position: the last sequence number of
// the newest committed transaction. Walsender commands (CREATE_REPLICATION_SLOT,
// IDENTIFY_SYSTEM) report it without reading the change log, which would need
// the backend that another session's open transaction may hold. While a
// transaction is open nothing else can commit (one backend), so the position
// is exact at any moment.

import type { PGlite } from '@electric-sql/pglite'
import { COMMIT_CHANNEL } from '../capture/names'

interface Hub {
  listeners: Set<() => void>
  ready: Promise<unknown>
  position: bigint
}

const hubs = new WeakMap<PGlite, Hub>()

function hub(db: PGlite): Hub {
  let h = hubs.get(db)
  if (!h) {
    const listeners = new Set<() => void>()
    const created: Hub = { listeners, position: 0n, ready: Promise.resolve() }
    created.ready = db.listen(COMMIT_CHANNEL, (payload) => signalCommit(db, [payload]))
    hubs.set(db, (h = created))
  }
  return h
}

/** Starts listening and sets the position read while no transaction was open (installChangeTracking). */
export async function startCommitSignal(db: PGlite, position: bigint): Promise<void> {
  const h = hub(db)
  if (position > h.position) h.position = position
  await h.ready
}

export async function subscribeCommits(db: PGlite, onCommit: () => void): Promise<() => void> {
  const h = hub(db)
  await h.ready
  h.listeners.add(onCommit)
  return () => h.listeners.delete(onCommit)
}

/** The last sequence number of the newest committed transaction (0 before any). */
export function committedPosition(db: PGlite): bigint {
  return hubs.get(db)?.position ?? 0n
}

/**
 * Wake every session of `db` as a commit notification would, with the
 * notifications' payloads. Statements run through PGlite's raw protocol path
 * (wire sessions) return their notifications as bytes instead of
 * dispatching them (wire/backend-filter.ts).
 */
export function signalCommit(db: PGlite, payloads: string[]): void {
  const h = hubs.get(db)
  if (!h) return
  for (const p of payloads) {
    // Payloads are decimal sequence numbers; anything else is not ours to count.
    if (/^\d+$/.test(p)) {
      const seq = BigInt(p)
      if (seq > h.position) h.position = seq
    }
  }
  h.listeners.forEach((l) => l())
}
