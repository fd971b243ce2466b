// zero-cache 1.9.0 in one Node process on the tab's SQLite (run with
// `--import tsx --import ./register.mjs`): SINGLE_PROCESS=1, so its workers
// run in this process as they will in the tab, and its runner started as an
// embedder starts it. The replica lives in this process's memory, so this
// process also answers the tests' replica queries: one JSON request per
// stdin line, {id, sql}; one JSON reply per line on fd 3, as
// test/support/sqlite-reader.mjs does for a replica file.

import { createWriteStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { zeroPackageDir } from '../../../src/node/zero-cache'
import Database from './zero-sqlite3'

process.env.SINGLE_PROCESS = '1'

const { runWorker } = (await import(pathToFileURL(join(zeroPackageDir(), 'out/zero-cache/src/server/runner/run-worker.js')).href)) as {
  runWorker(parent: null, env: NodeJS.ProcessEnv): Promise<void>
}

const replies = createWriteStream('', { fd: 3 })
let replica: Database | undefined
void (async () => {
  for await (const line of createInterface({ input: process.stdin })) {
    const { id, sql } = JSON.parse(line) as { id: number; sql: string }
    try {
      replica ??= new Database(process.env.ZERO_REPLICA_FILE!, { readonly: true, fileMustExist: true }).defaultSafeIntegers(true)
      const rows = replica.prepare(sql).all()
      replies.write(JSON.stringify({ id, rows }, (_k, v) => (typeof v === 'bigint' ? { bigint: v.toString() } : v)) + '\n')
    } catch (e) {
      replies.write(JSON.stringify({ id, error: String((e as Error).message ?? e) }) + '\n')
    }
  }
})()

await runWorker(null, process.env)

// zero-cache has stopped (a signal, or a fatal error it logged): nothing else may keep this process up.
process.exit(0)
