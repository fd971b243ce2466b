// Reads zero-cache's SQLite replica for the zero-cache tests. Runs under the
// Node 22 that zero-cache uses, since @rocicorp/zero-sqlite3 ships its
// prebuilt binding for that Node only. One JSON request per stdin line,
// {id, sql}; one JSON reply per stdout line, {id, rows} or {id, error}.

import { createRequire } from 'node:module'
import { createInterface } from 'node:readline'

const require = createRequire(import.meta.url)
const Database = require('@rocicorp/zero-sqlite3')
const db = new Database(process.argv[2], { readonly: true, fileMustExist: true })
db.defaultSafeIntegers(true) // int8 values beyond 2^53 stay exact

for await (const line of createInterface({ input: process.stdin })) {
  const { id, sql } = JSON.parse(line)
  try {
    const rows = db.prepare(sql).all()
    process.stdout.write(JSON.stringify({ id, rows }, (_k, v) => (typeof v === 'bigint' ? { bigint: v.toString() } : v)) + '\n')
  } catch (e) {
    process.stdout.write(JSON.stringify({ id, error: String(e.message ?? e) }) + '\n')
  }
}
