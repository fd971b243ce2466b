// The two ways tabgres uses Web Locks, for every layer that needs them (the
// worker, the page, zero-cache's worker): hold one while a context lives (the
// browser lets go of it when the context ends, however it ends), and learn
// that another context's is free (it ended). A MessagePort says neither.

/** Holds the lock `name` until the returned release is called (or this context ends); waits for it, bounded by `signal`. */
export function holdLock(name: string, signal?: AbortSignal): Promise<() => void> {
  return new Promise((held, failed) => {
    navigator.locks.request(name, { signal }, () => new Promise<void>((release) => held(release))).catch(failed)
  })
}

/**
 * Runs `then` once the lock `name` is free: whoever held it let go or ended.
 * 'shared' lets many wait on one holder at once. Nothing runs if `signal`
 * aborts first.
 */
export function whenFree(name: string, then: () => unknown, { signal, mode = 'exclusive' }: { signal?: AbortSignal; mode?: LockMode } = {}): void {
  navigator.locks.request(name, { signal, mode }, async () => void (await then())).catch(() => {}) // aborted
}
