// bench:browser's boot section, run from Node: builds bench/browser/boot.html
// for production (what a first visit loads), serves it cross-origin isolated
// on 127.0.0.1, and runs window.runBoot in a fresh browser context per mode,
// so that each "first" is a fresh profile's. Medians and ratios are taken
// here, from times measured in the same run.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type Browser } from 'playwright'
import { build, preview } from 'vite'
import type { BootMode, BootResults, Timed } from './boot'
import { CHROMIUM_ARGS, chromiumPath } from '../../test/support/chromium'
import { freePort } from '../../test/support/free-port'
import { templateAsset } from '../../scripts/vite-template'

const root = fileURLToPath(new URL('../..', import.meta.url))
const ISOLATED = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' }

export interface BootSummary {
  runs: number
  tabgres: { firstEver: number; fresh: number; reopen: number; firstEverPhases: string; freshPhases: string; reopenPhases: string }
  bare: { memoryFirst: number; memory: number; idbNew: number; idbReopen: number }
  kit: { first: number; fresh: { samples: number; p50: number; p95: number }; memory: NonNullable<BootResults['kit']>['memory'] }
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

export async function bootSection(runs: number): Promise<BootSummary> {
  const outDir = mkdtempSync(join(tmpdir(), 'tabgres-boot-'))
  let server: Awaited<ReturnType<typeof preview>> | null = null
  let browser: Browser | null = null
  try {
    const config = { configFile: false as const, root, logLevel: 'warn' as const, plugins: [templateAsset()], worker: { format: 'es' as const } }
    await build({ ...config, build: { outDir, emptyOutDir: true, rollupOptions: { input: join(root, 'bench/browser/boot.html') } } })
    const port = await freePort()
    server = await preview({ ...config, build: { outDir }, preview: { host: '127.0.0.1', port, strictPort: true, headers: ISOLATED } })
    browser = await chromium.launch({ executablePath: chromiumPath, headless: true, args: [...CHROMIUM_ARGS, '--enable-blink-features=ForceEagerMeasureMemory'] })
    const url = `http://127.0.0.1:${port}/bench/browser/boot.html`
    const run = async (mode: BootMode, n: number): Promise<BootResults> => {
      const context = await browser!.newContext() // a fresh profile: no cache, no IndexedDB
      try {
        const page = await context.newPage()
        await page.exposeFunction('benchLog', (line: string) => console.log(`  ${line}`))
        page.on('pageerror', (e) => console.error(`  [page error] ${e.message}`))
        await page.goto(url)
        await page.waitForFunction(() => typeof window.runBoot === 'function')
        return await page.evaluate(([m, k]) => window.runBoot(m, k), [mode, n] as const)
      } finally {
        await context.close()
      }
    }
    const t = (await run('tabgres', runs)).tabgres!
    const b = (await run('bare', runs)).bare!
    const k = (await run('kit', 50)).kit!
    const page = (x: Timed[]) => median(x.map((v) => v.pageMs))
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
      kit: { first: k.first, fresh: { samples: k.fresh.length, p50: quantile(k.fresh, 0.5), p95: quantile(k.fresh, 0.95) }, memory: k.memory },
      ratios: {
        firstEverVsBareMemoryFirst: t.firstEver.pageMs / b.memoryFirst.pageMs,
        firstEverVsBareMemory: t.firstEver.pageMs / page(b.memory),
        reopenVsBareReopen: page(t.reopen) / page(b.idbReopen),
      },
      raw: [{ tabgres: t }, { bare: b }, { kit: k }],
    }
  } finally {
    await browser?.close()
    await server?.close()
    rmSync(outDir, { recursive: true, force: true })
  }
}
