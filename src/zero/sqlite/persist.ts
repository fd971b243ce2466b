// Keeping the tab's SQLite files (files.ts) in a store: the changes taken
// between two calls into SQLite are a crash-consistent image (see files.ts),
// so a store that applies each batch whole, in order, can be reloaded after
// a crash at any point and SQLite recovers from its wal files as after a
// power cut. Batches are applied one after another, never two at once.

import type { FileChanges, MemoryFiles } from './files'

export interface FileStore {
  /** Applies one batch whole (all of it or, on a crash, none of it). */
  apply(changes: FileChanges): Promise<void> | void
}

export interface PersisterOptions {
  /** How often changes are taken while there are any (ms). */
  intervalMs?: number
  /** A batch the store failed to apply: persisting stops, and this says why. */
  onError?: (e: unknown) => void
  /** After each batch the store has applied (the files changed and that change is kept). */
  onApplied?: () => void
}

export class Persister {
  readonly #files: MemoryFiles
  readonly #store: FileStore
  readonly #timer: ReturnType<typeof setInterval>
  #applying: Promise<void> = Promise.resolve()
  /** Batches taken and not yet applied, oldest first. */
  readonly #queued: FileChanges[] = []
  #failed: unknown
  #onError?: (e: unknown) => void
  #onApplied?: () => void

  constructor(files: MemoryFiles, store: FileStore, options: PersisterOptions = {}) {
    this.#files = files
    this.#store = store
    this.#onError = options.onError
    this.#onApplied = options.onApplied
    this.#timer = setInterval(() => void this.flush().catch(() => {}), options.intervalMs ?? 100)
    // A timer must not keep a Node process alive by itself.
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Takes what changed now and settles once the store holds it (and every batch before it). */
  flush(): Promise<void> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed)
    if (!this.#files.hasChanges) return this.#applying
    const batch = this.#files.takeChanges()
    this.#queued.push(batch)
    this.#applying = this.#applying
      .then(async () => {
        // flushSync may have applied it already.
        if (this.#queued[0] !== batch) return
        await this.#store.apply(batch)
        this.#queued.shift()
        this.#onApplied?.()
      })
      .catch((e: unknown) => {
        if (this.#failed === undefined) {
          this.#failed = e
          clearInterval(this.#timer)
          this.#onError?.(e)
        }
        throw e
      })
    return this.#applying
  }

  /**
   * For a store whose apply is synchronous, at a process's exit (no promise
   * runs there): applies now what is queued and what changed since.
   */
  flushSync(): void {
    if (this.#failed !== undefined) return
    for (const batch of this.#queued.splice(0)) this.#store.apply(batch)
    if (this.#files.hasChanges) this.#store.apply(this.#files.takeChanges())
  }

  /** The last flush, then no more. */
  async close(): Promise<void> {
    clearInterval(this.#timer)
    await this.flush()
  }
}
