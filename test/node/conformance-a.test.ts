// Workload A against the engine, compared message by message with the stream a
// real PostgreSQL 15.18 sent for it (../shared/conformance/golden/A.json),
// decoded by the conformance kit's own decoder, independent of ours.

// A third-party pgoutput parser (it parses values by type OID), used as is.
import { PgoutputParser } from 'pg-logical-replication/dist/output-plugins/pgoutput/pgoutput-parser.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { conformanceAvailable, golden, referenceDecoder, workload } from '../support/conformance'
import { replayCapture, type Replay } from '../support/replay-capture'
import { payloads } from '../support/stream'

/**
 * Known differences from the PostgreSQL 15 capture: golden messages (by index
 * in golden/A.json's `normalized`) that tabgres does not send, each with its
 * reason. Anything else that differs fails the test.
 */
export const NOT_SENT: Record<number, string> = {}

// Workload A twice: values as text (A.json) and in each type's binary send format (A-binary.json).
describe.skipIf(!conformanceAvailable()).each([
  { capture: 'A.json', slot: (s: string) => s },
  { capture: 'A-binary.json', slot: (s: string) => `${s}_bin` },
])('conformance: workload A ($capture)', ({ capture, slot: slotOf }) => {
  let replay: Replay

  beforeAll(async () => {
    const A = await workload('A.mjs')
    replay = await replayCapture(A, slotOf(A.slot), golden(capture).startReplication)
  })

  afterAll(() => replay?.close())

  it('statements that must fail fail with the same SQLSTATE', async () => {
    const A = await workload('A.mjs')
    A.workload.forEach((step, i) => {
      if (typeof step === 'string') expect(replay.errors[i], step).toBeUndefined()
      else expect(replay.errors[i], step.sql).toBe(step.expectError)
    })
  })

  it('the normalized stream equals PostgreSQL 15.18 message by message', async () => {
    const { normalize } = await referenceDecoder()
    const ours = normalize(payloads(replay.stream))
    const theirs = (golden(capture).normalized as unknown[]).filter((_, i) => !(i in NOT_SENT))
    const diffs: string[] = []
    for (let i = 0; i < Math.max(ours.length, theirs.length); i++) {
      if (JSON.stringify(ours[i]) === JSON.stringify(theirs[i])) continue
      diffs.push(`#${i}\n  ours:   ${JSON.stringify(ours[i])?.slice(0, 300)}\n  theirs: ${JSON.stringify(theirs[i])?.slice(0, 300)}`)
    }
    expect(diffs.join('\n')).toBe('')
    expect(ours.length).toBe(theirs.length)
  })

  it("pg-logical-replication's pgoutput parser decodes every frame", () => {
    const parser = new PgoutputParser()
    const ours = payloads(replay.stream)
    const tags: Record<string, number> = {}
    let firstInsert: Record<string, unknown> | undefined
    for (const p of ours) {
      const m = parser.parse(Buffer.from(p))
      tags[m.tag] = (tags[m.tag] ?? 0) + 1
      if (m.tag === 'insert' && !firstInsert) firstInsert = m.new
    }
    expect(tags).toEqual(
      Object.fromEntries(
        Object.entries(golden(capture).counts.byTag as Record<string, number>).map(([k, v]) => [
            { B: 'begin', C: 'commit', R: 'relation', Y: 'type', I: 'insert', U: 'update', D: 'delete', T: 'truncate', M: 'message' }[k],
            k === 'M' ? v - Object.keys(NOT_SENT).length : v,
          ]),
      ),
    )
    if (capture === 'A.json') {
      // Values typed by their real OIDs: int4 as number, bool as boolean, int4[] as an array.
      expect(firstInsert).toMatchObject({ id: 1, c_int2: 1, c_int4: 2, c_bool: true, c_text: 'hello', c_int4_arr: [1, 2, 3] })
    } else {
      // Binary columns reach the parser as their send format's bytes.
      expect(firstInsert).toMatchObject({ id: Buffer.of(0, 0, 0, 1), c_int2: Buffer.of(0, 1), c_bool: Buffer.of(1), c_text: Buffer.from('hello') })
    }
  })
})
