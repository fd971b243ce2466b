// PGlite's IndexedDB file system with flushing taken over by group commit.
//
// PGlite calls syncToFs after every statement; on IndexedDB (Emscripten's
// IDBFS) each call compares the whole tree and writes changed files in one
// IndexedDB transaction, about 100 ms. Here those per-statement calls do
// nothing and GroupCommit (./group-commit.ts) calls flush() instead, once for
// every group of writes, while it holds PGlite's query lock so that the
// snapshot it writes lies between statements (crash-consistent: what a power
// cut would leave on a disk, which WAL recovery handles at the next open).

import { IdbFs } from '@electric-sql/pglite'

export class GroupCommitIdbFs extends IdbFs {
  /** Called by PGlite after each statement: deferred to the group commit. */
  override syncToFs(): Promise<void> {
    return Promise.resolve()
  }

  /** Write every file changed since the last flush to IndexedDB, and wait for it. */
  flush(): Promise<void> {
    return super.syncToFs(false)
  }

  /** PGlite's shutdown checkpoint happens after the last group commit: persist it too. */
  override async closeFs(): Promise<void> {
    await this.flush()
    return super.closeFs()
  }
}
