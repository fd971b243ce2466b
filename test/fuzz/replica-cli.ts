// npm run fuzz:replica -- --ops N --seed S [--checkpoint K]
// Long differential runs of test/fuzz/replica.ts; without --seed, a random
// seed (printed first, so any failure can be replayed).

import { ReplicaFuzzFailure, runReplicaFuzz } from './replica'

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? process.argv[i + 1] : undefined
}

const seed = Number(arg('seed') ?? Math.floor(Math.random() * 2 ** 31))
const ops = Number(arg('ops') ?? 10_000)
const checkpointEvery = Number(arg('checkpoint') ?? 5000)
if (!Number.isInteger(seed) || !Number.isInteger(ops) || ops <= 0) {
  console.error('usage: npm run fuzz:replica -- [--ops N] [--seed S] [--checkpoint K]')
  process.exit(2)
}

console.log(`fuzz:replica seed ${seed}, ${ops} statements, checkpoint every ${checkpointEvery}`)
try {
  const r = await runReplicaFuzz({ seed, ops, checkpointEvery, log: (line) => console.log(line) })
  console.log(
    `ok: seed ${r.seed}, ${r.ops} statements in ${r.transactions} transactions (${r.rolledBack} rolled back), ` +
      `${r.tables} tables, ${r.messages} pgoutput messages applied ${JSON.stringify(r.seen)}, ${r.checkpoints} comparisons, ${r.restarts} reconnects, ` +
      `${r.changeLogRows} change-log rows left after the last ack, ${(r.ms / 1000).toFixed(1)} s ` +
      `(waiting for the replica ${(r.catchUpMs / 1000).toFixed(1)} s, comparing ${(r.compareMs / 1000).toFixed(1)} s)`,
  )
} catch (e) {
  console.error(e instanceof ReplicaFuzzFailure ? e.message : e)
  process.exit(1)
}
