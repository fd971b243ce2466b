// A Vite plugin that makes sure the template asset (./template-asset.ts)
// exists and is current before a build or a dev server resolves the worker's
// `new URL('./storage/template.tar.gz', import.meta.url)`.
//
// The asset is made in a process of its own (tsx, as the Zero bundle is):
// importing the engine's code here would pull it into every Vite config that
// uses this plugin, and a config loader then has to bundle all of it.

import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Plugin } from 'vite'

const SCRIPT = fileURLToPath(new URL('./template-asset.ts', import.meta.url))
const REPO = fileURLToPath(new URL('..', import.meta.url))

/** One check per process, however many configs (test projects) start at once: two writers of the asset would race. */
let made: Promise<unknown> | null = null

export function templateAsset(): Plugin {
  return {
    name: 'tabgres-template-asset',
    async buildStart() {
      made ??= promisify(execFile)(process.execPath, ['--import', 'tsx', SCRIPT], { cwd: REPO })
      await made
    },
  }
}
