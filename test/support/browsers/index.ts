// Starts a Session (./driver.ts) in any engine. Each engine's tool loads only when it is used.

import type { LaunchOptions, Session } from './driver.ts'
import type { EngineName } from './engines.ts'

export { waitForFunction, type LaunchOptions, type PageFunction, type Session, type Tab } from './driver.ts'
export { ENGINES, enginesToTest, type EngineName } from './engines.ts'

export async function launch(engine: EngineName, opts: LaunchOptions = {}): Promise<Session> {
  if (engine === 'chromium') return (await import('./playwright.ts')).launchPlaywright(opts)
  if (engine === 'firefox') return (await import('./puppeteer.ts')).launchFirefox(opts)
  return (await import('./webdriver.ts')).launchWebKit(opts)
}
