// Where a database's boot spends its time, phase by phase, told to a
// progress display as each phase starts (BootInfo.phases, onProgress).

/**
 * 'pglite' includes fetching the template for a new database (in parallel
 * with PGlite's wasm); BootInfo.phases breaks it down ('pglite: wasm', ...).
 */
export type BootPhase = 'lock' | 'registry' | 'pglite' | 'install'

/** A boot phase starting (page: a progress display); 'ready' when the database answers. */
export interface BootProgress {
  phase: BootPhase | 'ready'
  /** Since the open began. */
  elapsedMs: number
}

export interface BootClock {
  /** Ends the current phase and starts `next` ('ready': the boot is over). */
  phase(next: BootPhase | 'ready'): void
  /** Time per phase so far (ms). */
  readonly phases: Record<string, number>
  elapsed(): number
}

export function startBootClock(first: BootPhase, onProgress?: (p: BootProgress) => void): BootClock {
  const t0 = performance.now()
  const phases: Record<string, number> = {}
  let mark = t0
  let current = first
  const tell = (p: BootPhase | 'ready') => {
    // A display's failure is not the database's (a Comlink proxy's call returns a promise).
    try {
      const r: unknown = onProgress?.({ phase: p, elapsedMs: performance.now() - t0 })
      if (r instanceof Promise) r.catch(() => {})
    } catch {
      // as above
    }
  }
  tell(first)
  return {
    phases,
    elapsed: () => performance.now() - t0,
    phase(next) {
      const now = performance.now()
      phases[current] = now - mark
      mark = now
      if (next !== 'ready') current = next
      tell(next)
    },
  }
}

/**
 * The download of an asset named `<stem>...<ext>` (bundlers add a hash) that
 * began after `since`, from this worker's resource timing, or undefined.
 */
export function downloadOf(stem: string, ext: string, since: number): PerformanceResourceTiming | undefined {
  return (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).find((e) => {
    const file = e.name.slice(e.name.lastIndexOf('/') + 1).split('?')[0]
    return e.startTime >= since && file.startsWith(stem) && file.endsWith(ext)
  })
}

