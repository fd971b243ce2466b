// Global setup of the browser project: zero-cache's bundle for the tab
// (npm run build:zero) where the test server serves files as built.

import { execFileSync } from 'node:child_process'

export function setup(): void {
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build-zero.ts', '--out', 'dist/public/zero-cache'], { stdio: 'inherit' })
}
