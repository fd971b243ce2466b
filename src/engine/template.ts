// The template data directory: a fresh cluster with capture installed,
// dumped as PGlite's gzip tarball. New databases load it instead of running
// initdb (seconds in WASM). It is made at build time in Node
// (scripts/template-asset.ts, the same PGlite and the same SQL) and shipped
// as an asset beside the worker; a browser makes it itself only when the
// asset cannot be fetched.

import { PGlite } from '@electric-sql/pglite'
import { INSTALL_SQL, installChangeTracking, installMark } from './install'

/**
 * initdb options for every cluster the engine creates. 1 MB WAL segments
 * (PostgreSQL's minimum; 16 MB by default): IndexedDB stores whole files, so
 * each group commit rewrites the WAL segment being written to, and its size
 * is most of a flush's cost.
 */
export const INITDB_PARAMS = ['--wal-segsize=1']

/**
 * A cheap fingerprint of the capture schema, the initdb options and how the
 * template is made (its install mark: install.ts): a change makes a new template.
 */
export function templateKey(): string {
  let h = 0
  for (const s of [...INSTALL_SQL, INITDB_PARAMS.join(' '), installMark('postgres', [])]) for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
  return `pglite-0.5.17/capture-${(h >>> 0).toString(16)}`
}

export async function makeTemplate(): Promise<Blob> {
  const t = await PGlite.create({ initDbStartParams: INITDB_PARAMS })
  try {
    await installChangeTracking(t)
    return await t.dumpDataDir('gzip')
  } finally {
    await t.close()
  }
}
