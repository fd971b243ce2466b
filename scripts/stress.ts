// The stress tier (npm run test:stress): the suites whose promises must hold
// on a busy machine (durability across restarts, the wire protocol with real
// clients, replicas fed by the stream, crashes and tab takeovers in Chromium) run while busy
// loops keep every core loaded, as a shared CI machine is. Every wait in
// them is on an event; a failure here is a real race, not a slow machine.
//
//   npm run test:stress                     # loops = cores + 1
//   STRESS_LOOPS=6 npm run test:stress      # heavier
//   TABGRES_ENGINES=webkit npm run test:stress   # the browser suites in another engine (default: Chromium)
//   npm run test:stress -- test/node/wire.test.ts   # other files (vitest filters)
//
// The loops are this script's children, stopped by their PIDs when the run
// ends, however it ends.

import { spawn, type ChildProcess } from 'node:child_process'
import { availableParallelism } from 'node:os'

const SUITES = [
  'test/node/durability.test.ts',
  'test/node/wire.test.ts',
  'test/node/replica-regressions.test.ts',
  'test/node/fuzz-replica.test.ts',
  'test/e2e/crash.test.ts',
  'test/e2e/tabs.test.ts',
]

const loops = Number(process.env.STRESS_LOOPS ?? availableParallelism() + 1)
const files = process.argv.slice(2).length ? process.argv.slice(2) : SUITES

const busy: ChildProcess[] = []
for (let i = 0; i < loops; i++) busy.push(spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }))
const stopLoops = () => {
  for (const p of busy) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL')
}
process.on('exit', stopLoops)
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.on(sig, () => {
    stopLoops()
    process.exit(130)
  })
}

console.log(`stress: ${loops} busy loops (PIDs ${busy.map((p) => p.pid).join(', ')}) beside ${files.join(' ')}`)
// Chromium only, unless TABGRES_ENGINES says otherwise: npm test runs these in every engine already, and CI's time is bounded.
const env = { ...process.env, TABGRES_ENGINES: process.env.TABGRES_ENGINES ?? 'chromium' }
const vitest = spawn('npx', ['vitest', 'run', '--project', 'node', '--project', 'e2e', ...files], { stdio: 'inherit', env })
vitest.on('exit', (code, signal) => {
  stopLoops()
  process.exit(code ?? (signal ? 1 : 0))
})
