// `node:perf_hooks` for the tab: the platform's performance, and an event
// loop delay histogram measured the way Node's is (a timer's lateness).

export const { performance, PerformanceObserver } = globalThis as unknown as typeof import('node:perf_hooks')

export function monitorEventLoopDelay({ resolution = 10 }: { resolution?: number } = {}) {
  let samples: number[] = []
  let timer: ReturnType<typeof setInterval> | undefined
  let last = 0
  const ns = (ms: number) => ms * 1e6
  const sorted = () => [...samples].sort((a, b) => a - b)
  const h = {
    enable() {
      if (timer) return false
      last = performance.now()
      timer = setInterval(() => {
        const now = performance.now()
        samples.push(Math.max(0, now - last - resolution))
        last = now
      }, resolution)
      return true
    },
    disable() {
      if (!timer) return false
      clearInterval(timer)
      timer = undefined
      return true
    },
    reset() {
      samples = []
    },
    percentile(p: number) {
      const s = sorted()
      return s.length ? ns(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!) : 0
    },
    get min() {
      return samples.length ? ns(Math.min(...samples)) : 0
    },
    get max() {
      return samples.length ? ns(Math.max(...samples)) : 0
    },
    get mean() {
      return samples.length ? ns(samples.reduce((a, b) => a + b, 0) / samples.length) : 0
    },
    get stddev() {
      return 0
    },
    get count() {
      return samples.length
    },
    get exceeds() {
      return 0
    },
    get percentiles() {
      return new Map([50, 90, 99].map((p) => [p, h.percentile(p)]))
    },
  }
  return h
}

export function createHistogram() {
  return monitorEventLoopDelay()
}

export const constants = {}
export default { performance, PerformanceObserver, monitorEventLoopDelay, createHistogram, constants }
