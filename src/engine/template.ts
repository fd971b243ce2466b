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
  for (const s of [...INSTALL_SQL, INITDB_PARAMS.join(' '), installMark('postgres', []), ...SETTLE_SQL]) for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
  return `pglite-0.5.17/capture-${(h >>> 0).toString(16)}`
}

/**
 * After the install: tuples frozen (their hint bits set once, here, not by
 * each database's first reads) and a checkpoint, so that nothing is left to
 * replay. The dump is of a running cluster, so every database made from it
 * starts with crash recovery; without the checkpoint that replays the whole
 * install and rewrites ~100 catalog files (12 MB a layered database would
 * store at its first flush, and time in every boot).
 */
const SETTLE_SQL = ['VACUUM FREEZE', 'CHECKPOINT']

/** The template's archive as bytes: what IndexedDB stores everywhere (WebKit refuses a Blob there). */
export async function makeTemplate(): Promise<Uint8Array<ArrayBuffer>> {
  const t = await PGlite.create({ initDbStartParams: INITDB_PARAMS })
  try {
    await installChangeTracking(t)
    for (const sql of SETTLE_SQL) await t.exec(sql) // one statement each: VACUUM refuses a multi-statement string's implicit transaction
    return new Uint8Array(await (await t.dumpDataDir('gzip')).arrayBuffer())
  } finally {
    await t.close()
  }
}
