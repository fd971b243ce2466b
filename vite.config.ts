import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { playwright } from '@vitest/browser-playwright'
import { CHROMIUM_ARGS, chromiumPath, enginesToTest } from './test/support/browsers/engines.ts'
import { engineProvider } from './test/support/browsers/vitest-provider.ts'
import { templateAsset } from './scripts/vite-template.ts'


export default defineConfig({
  // PGlite is imported only inside the worker: pre-bundling it would make Vite
  // re-optimize mid-run and reload the test page. Comlink is shared by both.
  optimizeDeps: { exclude: ['@electric-sql/pglite'], include: ['comlink', '@rocicorp/zero', '@rocicorp/zero/server'] },
  // ES workers keep PGlite's lazy chunks (and its wasm/data files) separate.
  worker: { format: 'es' },
  // The template data directory new databases start from, made in Node first.
  plugins: [templateAsset()],
  test: {
    projects: [
      {
        test: {
          name: 'node',
          environment: 'node',
          // The package's own entry points, as an app imports them (examples/).
          alias: { 'tabgres/engine': fileURLToPath(new URL('./src/engine/index.ts', import.meta.url)) },
          include: ['src/**/*.test.ts', 'test/node/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        // zero-cache (its own Node 22 process) on `npm run serve`.
        test: {
          name: 'zero',
          environment: 'node',
          include: ['test/zero/**/*.test.ts'],
          testTimeout: 240_000,
          hookTimeout: 120_000,
        },
      },
      {
        // The built playground in Chromium, driven by Playwright from Node.
        test: {
          name: 'e2e',
          environment: 'node',
          include: ['test/e2e/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
        },
      },
      // The runtime in each engine: the same suites, one project per engine (a project has one provider).
      ...enginesToTest().map((engine) => ({
        extends: true as const,
        // Served as built, not transformed: zero-cache's bundle (npm run build:zero) runs in a worker of its own.
        publicDir: 'dist/public',
        test: {
          name: `browser-${engine}`,
          include: ['test/browser/**/*.test.ts', 'examples/**/*.test.ts'],
          globalSetup: ['test/support/zero-bundle.ts'],
          // The package's browser entry points, as an app imports them (examples/testing-kit).
          alias: [
            { find: /^tabgres$/, replacement: fileURLToPath(new URL('./src/client/index.ts', import.meta.url)) },
            { find: /^tabgres\/testing\/browser$/, replacement: fileURLToPath(new URL('./src/testing/browser.ts', import.meta.url)) },
          ],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          browser: {
            enabled: true,
            headless: true,
            screenshotFailures: false,
            // Chromium through Vitest's Playwright provider; Firefox and WebKit through ours (test/support/browsers).
            provider: engine === 'chromium' ? playwright({ launchOptions: { executablePath: chromiumPath, args: CHROMIUM_ARGS } }) : engineProvider(engine),
            instances: [{ browser: engine, name: `browser (${engine})` }],
          },
        },
      })),
    ],
  },
})
