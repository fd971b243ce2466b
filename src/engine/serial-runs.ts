// One task at a time, with requests coalesced: a request made while the task
// runs cannot be served by that run (it may have started too early: a flush
// that copied its pages before the caller's commit, a prune that read the
// slots before an acknowledgement), so it waits for one next run, which every
// request made meanwhile shares. Used by group commit and by pruning.

export class SerialRuns<T> {
  private running: Promise<T> | null = null
  private queued: Promise<T> | null = null

  constructor(private readonly task: () => Promise<T>) {}

  /** Resolves with the result of a run that started after this call. */
  request(): Promise<T> {
    if (this.queued) return this.queued
    if (this.running) {
      this.queued = this.running
        .catch(() => {})
        .then(() => {
          this.queued = null
          return this.request()
        })
      return this.queued
    }
    const run = this.task()
    this.running = run
    run.catch(() => {}).finally(() => {
      if (this.running === run) this.running = null
    })
    return run
  }

  /** Resolves when no run is running or queued (whatever their outcome). */
  async settled(): Promise<void> {
    for (;;) {
      const pending = this.queued ?? this.running
      if (!pending) return
      await pending.catch(() => {})
    }
  }
}
