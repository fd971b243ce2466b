// Where a worker gets the template data directory (src/engine/template.ts):
// this origin's registry after the first use; else the asset made at build
// time, fetched from beside the worker; else (no asset, as in a build
// without the step, or offline before it was cached) made here, which runs
// initdb in WASM.

import { makeTemplate, templateKey } from '../../engine/template'
import { loadTemplate, saveTemplate } from './registry'

/** Where a new database's template came from: this origin's registry, the shipped asset, or made in the tab. */
export type TemplateSource = 'registry' | 'asset' | 'made'

export async function templateData(assetUrl: URL): Promise<{ data: Blob; source: TemplateSource }> {
  const key = templateKey()
  const cached = await loadTemplate(key)
  if (cached) return { data: cached, source: 'registry' }
  let data: Blob | null = null
  let source: TemplateSource = 'asset'
  try {
    const res = await fetch(assetUrl)
    if (res.ok) data = await res.blob()
  } catch {
    // Offline before the asset was cached, or no asset: make it below.
  }
  if (!data) {
    data = await makeTemplate()
    source = 'made'
  }
  await saveTemplate(key, data)
  return { data, source }
}
