// The public Node entry (tabgres/engine) as the README shows it: examples/engine.ts
// imports only the package's entry and must stream the insert it makes.

import { describe, expect, it, vi } from 'vitest'
import { example } from '../../examples/engine'
import type { PgoutputMessage } from 'tabgres/engine'

describe('tabgres/engine', () => {
  it("the README's example captures, streams and acknowledges an insert, then ends as CopyDone", async () => {
    const log = vi.spyOn(console, 'log').mockImplementation(() => {})
    const messages: PgoutputMessage[] = []
    const outcome = await example((m) => messages.push(m))
    expect(outcome).toEqual({ kind: 'copy-done' })
    expect(messages.map((m) => m.tag)).toEqual(['B', 'R', 'I', 'C'])
    const insert = messages[2]
    expect(insert.tag === 'I' && insert.new.columns).toEqual([
      { kind: 't', value: '1' },
      { kind: 't', value: 'a' },
    ])
    expect(log.mock.calls[0][0]).toEqual(['slot_name', 'consistent_point', 'snapshot_name', 'output_plugin'])
    log.mockRestore()
  })
})
