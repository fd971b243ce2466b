// The commit signal: the capture's commit trigger NOTIFYs, PostgreSQL delivers
// the notification only after the transaction commits, and PGlite hands it to
// us right after the committing query returns. One LISTEN per database serves
// every session.

import type { PGlite } from '@electric-sql/pglite'
import { COMMIT_CHANNEL } from '../capture/schema.sql'

interface Hub {
  listeners: Set<() => void>
  ready: Promise<unknown>
}

const hubs = new WeakMap<PGlite, Hub>()

export async function subscribeCommits(db: PGlite, onCommit: () => void): Promise<() => void> {
  let hub = hubs.get(db)
  if (!hub) {
    const listeners = new Set<() => void>()
    hub = { listeners, ready: db.listen(COMMIT_CHANNEL, () => listeners.forEach((l) => l())) }
    hubs.set(db, hub)
  }
  await hub.ready
  hub.listeners.add(onCommit)
  const h = hub
  return () => h.listeners.delete(onCommit)
}

/**
 * Wake every session of `db` as a commit notification would. Statements run
 * through PGlite's raw protocol path (wire sessions) return their
 * notifications as bytes instead of dispatching them (wire/backend-filter.ts).
 */
export function signalCommit(db: PGlite): void {
  hubs.get(db)?.listeners.forEach((l) => l())
}
