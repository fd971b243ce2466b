// `npx tsx scripts/template-asset.ts`: makes the template data directory in Node
// (src/engine/template.ts) and writes it where the worker fetches it
// from, src/worker/storage/template.tar.gz, with its key beside it. Vite
// builds and dev servers call ensureTemplateAsset() first (the plugin in
// ./vite-template.ts); a current asset is kept.

import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { makeTemplate, templateKey } from '../src/engine/template'

export const TEMPLATE_ASSET = fileURLToPath(new URL('../src/worker/storage/template.tar.gz', import.meta.url))
const KEY_FILE = `${TEMPLATE_ASSET}.key`

/** Writes the asset unless the one there was made for the current key; returns its path. */
export async function ensureTemplateAsset(): Promise<string> {
  const key = templateKey()
  if (existsSync(TEMPLATE_ASSET) && existsSync(KEY_FILE) && readFileSync(KEY_FILE, 'utf8') === key) return TEMPLATE_ASSET
  const data = await makeTemplate()
  writeFileSync(TEMPLATE_ASSET, data)
  writeFileSync(KEY_FILE, key)
  return TEMPLATE_ASSET
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const t0 = performance.now()
  const path = await ensureTemplateAsset()
  console.log(`template: ${path} (${readFileSync(path).length} bytes, ${templateKey()}) in ${(performance.now() - t0).toFixed(0)} ms`)
}
