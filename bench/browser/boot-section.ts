// bench:browser's boot section, run from Node: builds bench/browser/boot.html
// for production (what a first visit loads), serves it cross-origin isolated
// on 127.0.0.1, and runs window.runBoot in a fresh browser session (a fresh
// profile) per mode and engine, so that each "first" is a fresh profile's.
// Medians and ratios are taken here, from times measured in the same run and
// the same engine.

import { fileURLToPath } from 'node:url'
import type { BootMode, BootResults, Timed } from './boot'
import { benchSession, runInPage, waitForPage, type EngineName } from '../browsers'
import { serveBuiltSite, type BuiltSite } from '../../test/support/built-site'
import { templateAsset } from '../../scripts/vite-template'
import { crossOriginIsolation } from '../../scripts/vite-cross-origin-isolation'

const root = fileURLToPath(new URL('../..', import.meta.url))
/** One mode's page run; a hung run fails instead of waiting forever. */
const MODE_TIMEOUT_MS = 15 * 60_000

export interface BootSummary {
  runs: number
  tabgres: { firstEver: number; fresh: number; reopen: number; firstEverPhases: string; freshPhases: string; reopenPhases: string }
  bare: { memoryFirst: number; memory: number; idbNew: number; idbReopen: number }
  kit: { first: number; fresh: { samples: number; p50: number; p95: number }; memory: NonNullable<BootResults['kit']>['memory'] & { na?: string } }
  ratios: { firstEverVsBareMemoryFirst: number; firstEverVsBareMemory: number; reopenVsBareReopen: number }
  raw: BootResults[]
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)]
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]
/** Each phase's median over runs, as "phase ms, ...". */
function phases(ts: Timed[]): string {
  const keys = [...new Set(ts.flatMap((t) => Object.keys(t.phases ?? {})))]
  return keys.map((k) => `${k} ${median(ts.map((t) => t.phases?.[k] ?? 0)).toFixed(0)}`).join(', ')
}

/** The production build of boot.html, served once for every engine. */
export function serveBootSite(): Promise<BuiltSite> {
  return serveBuiltSite({
    configFile: false,
    root,
    logLevel: 'warn',
    plugins: [templateAsset(), crossOriginIsolation()],
    worker: { format: 'es' },
    // PGlite's own build warnings (direct eval, node:module externalized) are not this bench's.
    build: { rollupOptions: { input: fileURLToPath(new URL('./boot.html', import.meta.url)), onwarn: () => {} } },
  })
}

export async function bootSection(site: BuiltSite, engine: EngineName, runs: number): Promise<BootSummary> {
  const url = new URL('bench/browser/boot.html', site.url).href
  const run = async (mode: BootMode, n: number): Promise<BootResults> => {
    // A fresh profile: no cache, no IndexedDB. Chromium measures memory at once, not at its next GC.
    const session = await benchSession(engine, ['--enable-blink-features=ForceEagerMeasureMemory'])
    try {
      const tab = await session.newTab()
      await tab.goto(url)
      await waitForPage(tab, 'runBoot')
      return await runInPage<BootResults>(tab, 'runBoot', [mode, n], { timeoutMs: MODE_TIMEOUT_MS })
    } finally {
      await session.close()
    }
  }
  const t = (await run('tabgres', runs)).tabgres!
  const b = (await run('bare', runs)).bare!
  const k = (await run('kit', 50)).kit!
  const page = (x: Timed[]) => median(x.map((v) => v.pageMs))
  const memory = k.memory.before === null ? { ...k.memory, na: 'performance.measureUserAgentSpecificMemory() is Chromium-only' } : k.memory
  return {
    runs,
    tabgres: {
      firstEver: t.firstEver.pageMs,
      fresh: page(t.fresh),
      reopen: page(t.reopen),
      firstEverPhases: phases([t.firstEver]),
      freshPhases: phases(t.fresh),
      reopenPhases: phases(t.reopen),
    },
    bare: { memoryFirst: b.memoryFirst.pageMs, memory: page(b.memory), idbNew: b.idbNew.pageMs, idbReopen: page(b.idbReopen) },
    kit: { first: k.first, fresh: { samples: k.fresh.length, p50: quantile(k.fresh, 0.5), p95: quantile(k.fresh, 0.95) }, memory },
    ratios: {
      firstEverVsBareMemoryFirst: t.firstEver.pageMs / b.memoryFirst.pageMs,
      firstEverVsBareMemory: t.firstEver.pageMs / page(b.memory),
      reopenVsBareReopen: page(t.reopen) / page(b.idbReopen),
    },
    raw: [{ tabgres: t }, { bare: b }, { kit: k }],
  }
}
