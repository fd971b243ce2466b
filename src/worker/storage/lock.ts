// One owner per database name: PGlite keeps an idb:// cluster in memory and
// writes it back whole-file, so two instances on one name silently diverge
// and overwrite each other. A Web Lock per name (held by this worker until it
// closes or is terminated, when the browser releases it) keeps one owner.

import { PgError, SqlState } from '../../protocol/errors'

export type OnLocked = 'fail' | 'wait'

/**
 * Acquires the name's lock; resolves with its release. 'fail' rejects at once
 * with 55006 when another tab or worker holds it; 'wait' waits for it.
 */
export function acquireNameLock(name: string, onLocked: OnLocked): Promise<() => void> {
  if (typeof navigator === 'undefined' || !navigator.locks) {
    throw new PgError({ code: SqlState.featureNotSupported, message: 'Web Locks are not available in this environment' })
  }
  return new Promise((resolve, reject) => {
    navigator.locks
      .request(`tabgres:${name}`, { ifAvailable: onLocked === 'fail' }, (lock) => {
        if (!lock) {
          reject(
            new PgError({
              code: SqlState.objectInUse,
              message: `database "${name}" is open in another tab or worker`,
              hint: 'Close it there, or open with { onLocked: "wait" } to wait for it.',
            }),
          )
          return undefined
        }
        // Held until release() is called (or the worker ends).
        return new Promise<void>((release) => resolve(release))
      })
      .catch(reject)
  })
}
