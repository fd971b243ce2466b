// npm run serve -- --port 6432 --data <dir|memory> [--password secret] [--auth md5|password|scram-sha-256]
// Runs the engine on TCP (127.0.0.1) and prints its address once it accepts connections.

import { PGlite } from '@electric-sql/pglite'
import { parseArgs } from 'node:util'
import { installChangeTracking } from '../worker/replication/change-tracker'
import type { AuthMethod } from '../worker/wire/auth'
import { listen } from './server'

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '6432' },
    data: { type: 'string', default: 'memory' },
    password: { type: 'string' },
    auth: { type: 'string' },
  },
})

const db = new PGlite(values.data === 'memory' ? undefined : values.data)
await installChangeTracking(db, { retention: 'discard' })
const server = await listen(db, {
  port: Number(values.port),
  password: values.password,
  auth: values.auth as AuthMethod | undefined,
})
console.log(`tabgres listening on postgresql://postgres@${server.host}:${server.port}/postgres (data: ${values.data})`)

const stop = async () => {
  await server.close()
  await db.close()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
