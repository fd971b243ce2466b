// How every PGlite the engine opens starts its backend.

import { PGlite } from '@electric-sql/pglite'

/**
 * PGlite's own start parameters, with shared_buffers at 16 MB instead of
 * PostgreSQL's 128 MB. PostgreSQL initialises all of its shared buffers at
 * start, and in WASM that was half of a boot (Node, from a data directory:
 * median 1,040 ms with 128 MB, 530 ms with 16 MB); each PGlite also keeps
 * them in its heap for as long as it runs. Little is lost: the cluster's
 * files are in memory already (Emscripten's file system), so a page that
 * misses the buffers is a copy, not a read from disk.
 */
export const ENGINE_START_PARAMS: readonly string[] = [...PGlite.defaultStartParams, '-c', 'shared_buffers=16MB']
