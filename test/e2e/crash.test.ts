// Crashes, in every engine: while a writer commits and an acknowledging consumer
// applies (test/e2e/crash/page.ts), the database dies at random points, by a
// page reload or by terminating its worker, CRASH_POINTS times (default 50 in Chromium, 12 in the
// others, which CI runs too).
// After every reopen the page checks that each acknowledged write is there,
// that LSNs never went backwards and nothing reached the consumer twice, and
// that the consumer equals the primary once caught up; this driver fails on
// the first violation. Crash points are seeded (CRASH_SEED); a failure prints
// the seed. Waits are on the page's progress counters, never on timers.

import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serveBuiltSite, type BuiltSite } from '../support/built-site'
import { enginesToTest, launch, waitForFunction, type EngineName, type Session, type Tab } from '../support/browsers'
import { seeded } from '../support/seeded'

const pointsIn = (engine: EngineName) => Number(process.env.CRASH_POINTS ?? (engine === 'chromium' ? 50 : 12))
const SEED = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31))
/** One reopen on a loaded 2-core machine: PGlite boot plus IndexedDB load. */
const ROUND_MS = 120_000

interface Progress {
  rounds: number
  acked: number
  commits: number
  frames: number
  violations: string[]
}

let site: BuiltSite

beforeAll(async () => {
  site = await serveBuiltSite({
    root: fileURLToPath(new URL('./crash/', import.meta.url)),
    configFile: false,
    optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
    worker: { format: 'es' },
    build: { rollupOptions: { onwarn: () => {} } },
  })
}, ROUND_MS)

afterAll(() => site?.close())

/** Waits until the page's progress satisfies `pred`; a violation fails at once, with the seed. */
async function until(tab: Tab, what: string, pred: string): Promise<Progress> {
  const p = await waitForFunction(
    tab,
    (p: string) => {
      const s = (window as unknown as { crashProgress?(): Progress }).crashProgress?.()
      return s && (s.violations.length > 0 || new Function('s', `return ${p}`)(s)) ? s : null
    },
    pred,
    { timeout: ROUND_MS, what },
  ).catch((e) => {
    throw new Error(`CRASH_SEED=${SEED}: waiting for ${what}: ${e}`)
  })
  if (p.violations.length) throw new Error(`CRASH_SEED=${SEED}: ${p.violations.join('\n')}`)
  return p
}

describe.each(enginesToTest())('%s', (engine) => {
  const POINTS = pointsIn(engine)
  let session: Session

  beforeAll(async () => {
    session = await launch(engine)
  }, ROUND_MS)

  afterAll(() => session?.close())

  it(`survives ${POINTS} crashes (page reloads and worker kills) with nothing lost, repeated or reordered`, async () => {
    const rng = seeded(SEED)
    const page = await session.newTab()
    await page.goto(site.url)
    let reloads = 0
    let kills = 0
    for (let i = 0; i < POINTS; i++) {
      const base = await until(page, `round ${i + 1} to verify and start writing`, `s.rounds >= ${i + 1}`)
      // A random point: after some acknowledged writes, or after some frames
      // reached the consumer (so that some kills land mid-stream, mid-apply).
      const byFrames = rng() < 0.4
      const k = 1 + Math.floor(rng() * (byFrames ? 12 : 6))
      await until(page, `crash point ${i + 1}`, byFrames ? `s.frames >= ${base.frames + k}` : `s.acked >= ${base.acked + k}`)
      if (rng() < 0.5) {
        reloads++
        await page.reload()
      } else {
        kills++
        await page.evaluate(() => (window as unknown as { crashWorker(): void }).crashWorker(), undefined)
      }
    }
    const end = await until(page, 'the last reopen to verify', `s.rounds >= ${POINTS + 1}`)
    console.log(`crash test (CRASH_SEED=${SEED}): ${POINTS} crashes (${reloads} reloads, ${kills} worker kills), ${end.acked} acknowledged transactions, ${end.commits} applied by the consumer`)
    expect(end.violations).toEqual([])
    expect(end.acked).toBeGreaterThanOrEqual(POINTS)
    expect(reloads).toBeGreaterThan(0)
    expect(kills).toBeGreaterThan(0)
    const errors = await page.evaluate(() => (window as unknown as { __pageErrors?: string[] }).__pageErrors ?? [], undefined)
    if (errors.length) console.warn(`crash page (${engine}) recorded:\n${errors.join('\n')}`)
  }, ROUND_MS * (POINTS + 2))
})
