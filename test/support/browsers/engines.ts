// The three browser engines tabgres is tested in, and where each one is on
// this machine. Nothing can be downloaded here, so each is Debian's package
// (or a path from the environment), driven by the one tool that can drive it:
//
// - Chromium (`chromium`): Playwright.
// - Firefox ESR (`firefox-esr`): puppeteer-core over WebDriver BiDi
//   (Playwright cannot drive stock Firefox: it sends commands only its own
//   patched build knows).
// - WebKit (`webkit2gtk-driver`: WebKitGTK's MiniBrowser, the engine of
//   Safari and of every iPhone browser): webdriverio over classic WebDriver,
//   under Xvfb, since MiniBrowser has no headless mode.
//
// Without its networking flags Chromium keeps trying Google's hosts, which
// this network refuses.

import { existsSync } from 'node:fs'
import { delimiter, join } from 'node:path'

export const ENGINES = ['chromium', 'firefox', 'webkit'] as const
export type EngineName = (typeof ENGINES)[number]

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

export const firefoxPath = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr'

export const webkit = {
  driver: process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver',
  miniBrowser: process.env.MINIBROWSER_PATH ?? '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser',
  xvfb: process.env.XVFB_PATH ?? 'Xvfb',
}

/** What to install, on Debian, for each engine (.ci/run installs the same). */
export const INSTALL: Record<EngineName, string> = {
  chromium: 'apt-get install -y chromium (or set CHROMIUM_PATH)',
  firefox: 'apt-get install -y firefox-esr (or set FIREFOX_PATH)',
  webkit: 'apt-get install -y webkit2gtk-driver xvfb xauth (or set WEBKIT_DRIVER_PATH, MINIBROWSER_PATH, XVFB_PATH)',
}

function onPath(command: string): boolean {
  if (command.includes('/')) return existsSync(command)
  return (process.env.PATH ?? '').split(delimiter).some((dir) => existsSync(join(dir, command)))
}

/** The files an engine needs that this machine lacks (none: it can run). */
export function missingFiles(engine: EngineName): string[] {
  const needs = engine === 'chromium' ? [chromiumPath] : engine === 'firefox' ? [firefoxPath] : [webkit.driver, webkit.miniBrowser, webkit.xvfb]
  return needs.filter((f) => !onPath(f))
}

/**
 * The engines this run tests: TABGRES_ENGINES (comma-separated) or all three.
 * One that is missing is left out with a loud warning naming its install
 * command, except under CI (CI or TABGRES_ALL_ENGINES set: .ci/run sets
 * the latter), which always has all three: there it fails.
 */
export function enginesToTest(): EngineName[] {
  const asked = (process.env.TABGRES_ENGINES?.split(',').map((s) => s.trim()).filter(Boolean) ?? [...ENGINES]) as EngineName[]
  for (const e of asked) if (!ENGINES.includes(e)) throw new Error(`TABGRES_ENGINES: unknown engine "${e}" (known: ${ENGINES.join(', ')})`)
  const found: EngineName[] = []
  for (const e of asked) {
    const lacking = missingFiles(e)
    if (lacking.length === 0) {
      found.push(e)
      continue
    }
    const say = `${e}: not found (${lacking.join(', ')}). Install it: ${INSTALL[e]}`
    if (process.env.CI || process.env.TABGRES_ALL_ENGINES) throw new Error(`CI tests every engine; ${say}`)
    const bar = '!'.repeat(Math.min(100, say.length + 4))
    console.warn(`\n${bar}\n! ${say}\n! Its browser and e2e tests are SKIPPED on this machine.\n${bar}\n`)
  }
  return found
}
