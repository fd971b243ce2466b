// A Vitest browser provider for the engines Vitest's own providers cannot
// drive here (./engines.ts): Firefox (its webdriverio provider wants
// geckodriver, which Debian does not package) and WebKit (it refuses a
// MiniBrowser browserName). It only opens Vitest's tester page in a tab of a
// Session (./driver.ts); everything else runs over Vitest's own connection to
// that page. The suites use no provider commands (userEvent, screenshots),
// which is all this leaves out.

import { defineBrowserProvider } from '@vitest/browser'
import type { BrowserProvider, BrowserProviderOption } from 'vitest/node'
import type { Session, Tab } from './driver.ts'
import type { EngineName } from './engines.ts'
import { launch } from './index.ts'

class SessionProvider implements BrowserProvider {
  readonly name: string
  // One tester page runs the files one after another.
  readonly supportsParallelism = false
  private session: Promise<Session> | null = null
  private readonly tabs = new Map<string, Tab>()

  constructor(private readonly engine: EngineName) {
    this.name = `tabgres-${engine}`
  }

  getCommandsContext(): Record<string, unknown> {
    return {}
  }

  async openPage(sessionId: string, url: string): Promise<void> {
    this.session ??= launch(this.engine)
    const session = await this.session
    await this.tabs.get(sessionId)?.close()
    const tab = await session.newTab()
    this.tabs.set(sessionId, tab)
    await tab.goto(url)
  }

  async close(): Promise<void> {
    const session = this.session
    this.session = null
    this.tabs.clear()
    await (await session)?.close()
  }
}

export function engineProvider(engine: EngineName): BrowserProviderOption {
  return defineBrowserProvider({ name: `tabgres-${engine}`, supportedBrowser: [engine], options: {}, providerFactory: () => new SessionProvider(engine) })
}
