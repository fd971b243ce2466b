// Protocol 2 with streaming 'on', against our own capture from Debian's
// PostgreSQL 15.18 with logical_decoding_work_mem = 64kB on the walsender
// connection (test/golden/stream.json, from test/golden/stream.mjs): large
// transactions go out as Stream Start / Stop chunks cut where PostgreSQL's
// reorder buffer reaches the limit, with the xid in every message, and end
// with Stream Commit; small ones as Begin / Commit; a non-transactional
// message goes out between chunks. The golden keeps one line per message
// (test/support/conformance.ts, compactMessage): the values are compared by
// the full goldens of workload A.

import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactMessage, conformanceAvailable, referenceDecoder } from '../support/conformance'
import { replayCapture, type Replay } from '../support/replay-capture'
import { payloads } from '../support/stream'
import stream from '../golden/stream.mjs'

const golden = JSON.parse(readFileSync(new URL('../golden/stream.json', import.meta.url), 'utf8'))

describe.skipIf(!conformanceAvailable())('conformance: streaming large transactions (protocol 2)', () => {
  let replay: Replay
  beforeAll(async () => {
    replay = await replayCapture(stream, stream.slot, golden.startReplication, { logicalDecodingWorkMem: 64 * 1024 })
  })
  afterAll(() => replay?.close())

  it('the stream equals PostgreSQL 15.18 message by message, chunk boundaries included', async () => {
    const { normalize } = await referenceDecoder()
    const ours = (normalize(payloads(replay.stream)) as Record<string, unknown>[]).map(compactMessage)
    const theirs = golden.compact as string[]
    const diffs: string[] = []
    for (let i = 0; i < Math.max(ours.length, theirs.length) && diffs.length < 20; i++) {
      if (ours[i] !== theirs[i]) diffs.push(`#${i} ours: ${ours[i]} | theirs: ${theirs[i]}`)
    }
    expect(diffs.join('\n')).toBe('')
  })
})
