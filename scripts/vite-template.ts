// A Vite plugin that makes sure the template asset (./template-asset.ts)
// exists and is current before a build or a dev server resolves the worker's
// `new URL('./storage/template.tar.gz', import.meta.url)`.

import type { Plugin } from 'vite'
import { ensureTemplateAsset } from './template-asset'

export function templateAsset(): Plugin {
  return {
    name: 'tabgres-template-asset',
    async buildStart() {
      await ensureTemplateAsset()
    },
  }
}
