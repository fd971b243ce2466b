// How every PGlite the engine opens starts its backend.

import { PGlite } from '@electric-sql/pglite'

/**
 * PGlite's own start parameters, with shared_buffers at 8 MB instead of
 * PostgreSQL's 128 MB. The backend zeroes its whole shared memory at start
 * (Emscripten's mmap calls memset), and with 128 MB of buffers that was half
 * of a boot (Node, from a data directory: median 1,040 ms with 128 MB, 530 ms
 * with 16 MB); each PGlite also keeps them in its heap while it runs. Little
 * is lost: the cluster's files are in memory already (Emscripten's file
 * system), so a page that misses the buffers is a copy, not a disk read
 * (100k-row inserts, point reads and a scan took the same time at 128, 16
 * and 8 MB).
 */
export const ENGINE_START_PARAMS: readonly string[] = [...PGlite.defaultStartParams, '-c', 'shared_buffers=8MB']

/**
 * The testing kits' databases (src/testing): 2 MB of buffers. A test's
 * database is small and in memory; zeroing 8 MB was ~15-20 ms of a ~130 ms
 * boot (Node, median of 9 after warm-up: create 131 ms at 8 MB, 114 ms at
 * 2 MB; a table of 1,000 rows written and read in the same time).
 */
export const TEST_START_PARAMS: readonly string[] = [...PGlite.defaultStartParams, '-c', 'shared_buffers=2MB']
