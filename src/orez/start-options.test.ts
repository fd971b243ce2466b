import { describe, expect, it } from 'vitest'
import { PgError } from '../protocol/errors'
import { orezStartOptions } from './handler'

const opts = (o: Record<string, string>) => new Map(Object.entries(o))
const code = (f: () => unknown) => {
  try {
    f()
  } catch (e) {
    return (e as PgError).code
  }
  return 'no error'
}

describe("orez's START_REPLICATION options", () => {
  it('none: protocol 1, every table', () => {
    expect(orezStartOptions(new Map())).toEqual({ protoVersion: 1, publications: null, messages: false, binary: false, streaming: 'off', twoPhase: false })
  })

  it('without publication_names: every table; what is given is still checked as PostgreSQL does', () => {
    expect(orezStartOptions(opts({ proto_version: '1' }))).toEqual({ protoVersion: 1, publications: null, messages: false, binary: false, streaming: 'off', twoPhase: false })
    expect(code(() => orezStartOptions(opts({ publication_names: 'x' })))).toBe('0A000') // proto_version=0
    expect(code(() => orezStartOptions(opts({ proto_version: '1', streaming: 'on' })))).toBe('0A000')
    expect(orezStartOptions(opts({ proto_version: '1', publication_names: 'a,b' }))).toEqual({ protoVersion: 1, publications: ['a', 'b'], messages: false, binary: false, streaming: 'off', twoPhase: false })
  })
})
