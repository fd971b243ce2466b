// npm run zero -- [--data <dir>] [--port 6432] [--zero-port 4848] [--app-id zero]
// tabgres and zero-cache together, for a Zero app developer: one `npm run
// serve` with the three databases zero-cache needs (upstream `postgres`,
// `zero_cvr`, `zero_change`), persisted under --data, and zero-cache 1.9.0
// (unmodified, Node 22) on them with its replica in <data>/replica.db.
// Other ZERO_* settings (ZERO_QUERY_URL, ZERO_MUTATE_URL, ...) pass through
// from the environment. Ctrl-C stops zero-cache, then the databases.

import { mkdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { startServe } from './serve-process'
import { node22, startZeroCache } from './zero-cache'

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: '.tabgres/zero' },
    port: { type: 'string', default: '6432' },
    'zero-port': { type: 'string', default: '4848' },
    'app-id': { type: 'string', default: 'zero' },
  },
})

const runtime = node22()
if (!runtime.path) {
  console.error(`zero-cache needs Node >= 22: ${runtime.why}`)
  process.exit(1)
}

const data = resolve(values.data!)
mkdirSync(data, { recursive: true })
const serve = startServe({
  data: join(data, 'pg'),
  databases: ['postgres', 'zero_cvr', 'zero_change'],
  port: Number(values.port),
  onLine: (line) => console.log(`[tabgres] ${line}`),
})
await serve.ready
const zeroPort = Number(values['zero-port'])
const zero = startZeroCache({
  upstream: serve.url('postgres'),
  cvr: serve.url('zero_cvr'),
  change: serve.url('zero_change'),
  replicaFile: join(data, 'replica.db'),
  port: zeroPort,
  changeStreamerPort: zeroPort + 1,
  appId: values['app-id'],
  adminPassword: process.env.ZERO_ADMIN_PASSWORD,
  logLevel: (process.env.ZERO_LOG_LEVEL as 'info' | undefined) ?? 'info',
  onLine: (line) => console.log(`[zero-cache] ${line}`),
})

let stopping = false
const stop = async (code: number) => {
  if (stopping) return
  stopping = true
  await zero.stop()
  await serve.stop()
  process.exit(code)
}
process.on('SIGINT', () => void stop(0))
process.on('SIGTERM', () => void stop(0))
void zero.exited.then((c) => {
  if (!stopping) {
    console.error(`zero-cache exited (${c})`)
    void stop(1)
  }
})
void serve.exited.then((c) => {
  if (!stopping) {
    console.error(`tabgres exited (${c})`)
    stopping = true
    void zero.stop().then(() => process.exit(1))
  }
})

await zero.ready
console.log(`\nready: Zero clients connect to http://127.0.0.1:${zeroPort}; PostgreSQL clients to ${serve.url('postgres')}`)
