import { defineConfig } from 'vitest/config'
import { playwright } from '@vitest/browser-playwright'

// Debian's Chromium by default; CHROMIUM_PATH points elsewhere on other machines.
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export default defineConfig({
  // PGlite is imported only inside the worker: pre-bundling it would make Vite
  // re-optimize mid-run and reload the test page. Comlink is shared by both.
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink'] },
  // ES workers keep PGlite's lazy chunks (and its wasm/data files) separate.
  worker: { format: 'es' },
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          include: ['src/**/*.test.ts', 'test/node/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            provider: playwright({
              launchOptions: {
                executablePath: chromium,
                args: [
                  '--no-sandbox',
                  '--disable-gpu',
                  '--disable-quic',
                  '--no-first-run',
                  '--disable-background-networking',
                  '--disable-component-update',
                  '--disable-sync',
                ],
              },
            }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
})
