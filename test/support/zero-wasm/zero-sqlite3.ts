// '@rocicorp/zero-sqlite3' for zero-cache in Node on the tab's SQLite: the
// WebAssembly module, one instance for the process, its files in memory and
// kept in the image file named by TABGRES_ZERO_IMAGE (image-store.ts).

import { readFileSync } from 'node:fs'
import { instantiateSqlite } from '../../../src/zero/sqlite/binding'
import Database, { SqliteError, useSqlite } from '../../../src/zero/sqlite/database'
import { MemoryFiles } from '../../../src/zero/sqlite/files'
import { Persister } from '../../../src/zero/sqlite/persist'
import { ImageStore } from './image-store'

export const files = new MemoryFiles()
const store = new ImageStore(process.env.TABGRES_ZERO_IMAGE!)
store.loadInto(files)
useSqlite(await instantiateSqlite(readFileSync(new URL('../../../src/zero/sqlite/sqlite3.wasm', import.meta.url)), files))
export const persister = new Persister(files, store, {
  onError: (e) => {
    console.error('persisting the replica failed:', e)
    process.exit(70)
  },
})
// The image store applies synchronously, so this last batch is on disk before the process ends.
process.on('exit', () => persister.flushSync())

export { SqliteError }
export default Database
