// TRUNCATE as PostgreSQL 15 sends it, against our own capture from Debian's
// PostgreSQL 15.18 (test/golden/truncate.json, made with the conformance
// kit's capture.mjs from test/golden/truncate.mjs): one Truncate message per
// statement with every table it truncated that the publication carries
// (CASCADE's included), the CASCADE / RESTART IDENTITY flags, each table's
// Relation sent again before it, and again after the transaction. Decoded by
// the conformance kit's own decoder.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { conformanceAvailable, referenceDecoder } from '../support/conformance'
import { replayCapture, type Replay } from '../support/replay-capture'
import { payloads } from '../support/stream'
import truncate from '../golden/truncate.mjs'

const golden = JSON.parse(readFileSync(new URL('../golden/truncate.json', import.meta.url), 'utf8'))

describe.skipIf(!conformanceAvailable())('conformance: TRUNCATE statements', () => {
  let replay: Replay
  beforeAll(async () => {
    replay = await replayCapture(truncate, truncate.slot, golden.startReplication)
  })
  afterAll(() => replay?.close())

  it('every statement runs as on PostgreSQL 15', () => {
    expect(replay.errors).toEqual({})
  })

  it('the normalized stream equals PostgreSQL 15.18 message by message', async () => {
    const { normalize } = await referenceDecoder()
    const ours = normalize(payloads(replay.stream))
    const theirs = golden.normalized as unknown[]
    const diffs: string[] = []
    for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
      if (JSON.stringify(ours[i]) === JSON.stringify(theirs[i])) continue
      diffs.push(`#${i}\n  ours:   ${JSON.stringify(ours[i])?.slice(0, 300)}\n  theirs: ${JSON.stringify(theirs[i])?.slice(0, 300)}`)
    }
    expect(diffs.join('\n')).toBe('')
  })
})
