// Where a worker gets the template data directory (src/engine/template.ts):
// this origin's registry after the first use; else the asset made at build
// time, fetched from beside the worker; else (no asset, as in a build
// without the step, or offline before it was cached) made here, which runs
// initdb in WASM.
//
// A database made from the template stores only what differs from it
// (./idb-fs.ts), so every template a stored database names stays in the
// registry, and opening one needs that template's files: decoded once per
// worker and shared, copy on write, by the databases it opens.

import { makeTemplate, templateKey } from '../../engine/template'
import { readImage, type DataDirImage } from '../../engine/template-image'
import { PgError } from '../../protocol/errors'
import { loadTemplate, saveTemplate } from './registry'

/** Where a new database's template came from: this origin's registry, the shipped asset, or made in the tab. */
export type TemplateSource = 'registry' | 'asset' | 'made'

export interface Template {
  key: string
  image: DataDirImage
  source: TemplateSource
  /** Resolves once the template is in the registry: before a database layered on it stores anything. */
  saved: Promise<void>
}

/** Decoded templates of this worker, by key. */
const images = new Map<string, Promise<DataDirImage>>()

function decodeOnce(key: string, archive: () => Promise<Uint8Array | null>): Promise<DataDirImage | null> {
  const known = images.get(key)
  if (known) return known
  return archive().then((bytes) => {
    if (!bytes) return null
    const image = readImage(bytes)
    images.set(key, image)
    image.catch(() => images.delete(key))
    return image
  })
}

/** This worker's current template, once found: every database it creates shares its decode and its save. */
let current: Promise<Template> | null = null

/** The current template, for a database being created. */
export function currentTemplate(assetUrl: URL): Promise<Template> {
  current ??= findCurrent(assetUrl)
  current.catch(() => (current = null)) // the next database tries again
  return current
}

async function findCurrent(assetUrl: URL): Promise<Template> {
  const key = templateKey()
  const cached = await decodeOnce(key, () => loadTemplate(key).then((b) => b ?? null))
  if (cached) return { key, image: cached, source: 'registry', saved: Promise.resolve() }
  let source: TemplateSource = 'asset'
  let fetched: Uint8Array | null = null
  try {
    const res = await fetch(assetUrl)
    if (res.ok) fetched = new Uint8Array(await res.arrayBuffer())
  } catch {
    // Offline before the asset was cached, or no asset: make it below.
  }
  if (!fetched) {
    fetched = await makeTemplate()
    source = 'made'
  }
  const archive = fetched
  // Stored while PGlite starts; a database's first flush waits for it.
  const saved = saveTemplate(key, archive)
  // Awaited by each caller (no unhandled rejection meanwhile); a failed save is tried again for the next database.
  saved.catch(() => (current = null))
  const image = (await decodeOnce(key, async () => archive))!
  return { key, image, source, saved }
}

/** The files of the template a stored database is layered on. */
export async function templateImage(key: string, assetUrl: URL): Promise<DataDirImage> {
  const image = await decodeOnce(key, () => loadTemplate(key).then((b) => b ?? null))
  if (image) return image
  // Not in this origin's registry (cleared, or never saved): the asset is the same files if its key matches.
  if (key === templateKey()) return (await currentTemplate(assetUrl)).image
  throw new PgError({
    severity: 'FATAL',
    code: 'XX001', // data_corrupted: part of the database's files is gone
    message: `the template this database was made from is no longer stored`,
    detail: `The database stores only what differs from template ${key}, which is not in this origin's registry ("tabgres").`,
  })
}
