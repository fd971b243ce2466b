// npm run serve -- --port 6432 --data <dir|memory> [--db name ...] [--password secret] [--auth md5|password|scram-sha-256] [--log-statements]
// Runs the engine on TCP (127.0.0.1) and prints its address once it accepts connections.
//
// Each database name (--db, repeatable; default postgres) is its own PGlite:
// with --data <dir>, `postgres` is the cluster in <dir> itself when it is the
// only one or <dir> already holds it, and every other name is a cluster in
// <dir>/<name>, created on first start. A
// database that was not named gets 3D000, as in PostgreSQL.
// SIGTERM and SIGINT stop the server as PostgreSQL's fast shutdown does:
// sessions are ended (FATAL 57P01) and rolled back, then every database is
// closed, so what was committed is on disk.

import { PGlite } from '@electric-sql/pglite'
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { installChangeTracking } from '../engine/install'
import { ENGINE_START_PARAMS } from '../engine/start-params'
import type { AuthMethod } from '../wire/auth'
import { listen } from './server'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '6432' },
    data: { type: 'string', default: 'memory' },
    db: { type: 'string', multiple: true },
    password: { type: 'string' },
    auth: { type: 'string' },
    'log-statements': { type: 'boolean', default: false },
  },
})

const names = [...new Set(values.db?.length ? values.db : ['postgres'])]
const memory = values.data === 'memory'

/** Every served database starts as the engine's do (engine/start-params.ts). */
const startParams = [...ENGINE_START_PARAMS]

const quote = (name: string) => `"${name.replace(/"/g, '""')}"`

/** A cluster whose database `name` exists: PGlite's initdb makes `postgres` only. */
async function openDatabase(name: string): Promise<PGlite> {
  if (memory) {
    if (name === 'postgres') return new PGlite({ startParams })
    const seed = new PGlite()
    await seed.exec(`CREATE DATABASE ${quote(name)}`)
    const image = await seed.dumpDataDir('none')
    await seed.close()
    return new PGlite({ loadDataDir: image, database: name, startParams })
  }
  const root = values.data!
  // One database: <dir> is its cluster (the layout before several were served).
  if (name === 'postgres' && (names.length === 1 || existsSync(join(root, 'PG_VERSION')))) return new PGlite(root, { startParams })
  const dir = join(root, name)
  if (name !== 'postgres' && !existsSync(join(dir, 'PG_VERSION'))) {
    const seed = new PGlite(dir)
    await seed.exec(`CREATE DATABASE ${quote(name)}`)
    await seed.close()
  }
  return new PGlite(dir, { database: name, startParams })
}

// PGlite creates only the last directory of its path.
if (!memory) mkdirSync(values.data!, { recursive: true })
const databases = new Map<string, PGlite>()
for (const name of names) {
  const db = await openDatabase(name)
  await installChangeTracking(db, { retention: 'discard' })
  databases.set(name, db)
}

const server = await listen(async (name) => databases.get(name) ?? null, {
  port: Number(values.port),
  password: values.password,
  auth: values.auth as AuthMethod | undefined,
  log: values['log-statements'] ? (line) => console.error(line) : undefined,
})
for (const name of names) {
  console.log(`tabgres listening on postgresql://postgres@${server.host}:${server.port}/${name} (data: ${values.data})`)
}

let stopping = false
const stop = async () => {
  if (stopping) return
  stopping = true
  await server.close()
  await Promise.all([...databases.values()].map((db) => db.close()))
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
