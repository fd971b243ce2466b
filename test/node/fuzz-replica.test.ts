// The differential replica fuzz at CI size: 10,000 statements of a seeded
// random workload on a primary, streamed as pgoutput into a replica PGlite
// through the replica applier, compared table by table at checkpoints and at
// the end. FUZZ_REPLICA_SEED / FUZZ_REPLICA_OPS override the defaults; a
// failure names its seed (also in the test's title), and
// `npm run fuzz:replica -- --seed S --ops N` replays it.

import { expect, it } from 'vitest'
import { runReplicaFuzz } from '../fuzz/replica'

const seed = Number(process.env.FUZZ_REPLICA_SEED ?? 20260708)
const ops = Number(process.env.FUZZ_REPLICA_OPS ?? 10_000)

it(`a replica fed by the stream equals the primary after ${ops} random statements (seed ${seed})`, { timeout: 300_000 }, async () => {
  const r = await runReplicaFuzz({ seed, ops, checkpointEvery: 2500, ackEvery: 25 })
  expect(r.ops).toBeGreaterThanOrEqual(ops)
  expect(r.checkpoints).toBe(5)
  expect(r.rolledBack).toBeGreaterThan(0)
  expect(r.tables).toBeGreaterThan(6) // tables were created mid-run
  // The stream carried every kind of change the applier handles.
  for (const kind of ['R', 'Y', 'I', 'U', 'D', 'T', 'K', 'O', 'u']) expect(r.seen[kind], `seed ${seed}: ${kind}`).toBeGreaterThan(0)
  // Acknowledged changes were pruned: at most the last unacknowledged transactions remain.
  expect(r.changeLogRows).toBe(0)
})
