// Replication command tokenizer/parser and pgoutput START_REPLICATION options.

import { describe, expect, it } from 'vitest'
import { PgError } from '../../protocol/errors'
import { isReplicationCommand, parseReplicationCommand } from './commands'
import { parseStartOptions, splitIdentifiers } from './start-options'

function code(fn: () => unknown): string | undefined {
  try {
    fn()
  } catch (e) {
    expect(e).toBeInstanceOf(PgError)
    return (e as PgError).code
  }
  return undefined
}

describe('parseReplicationCommand', () => {
  it('IDENTIFY_SYSTEM and SHOW, keywords in any case, optional semicolon', () => {
    expect(parseReplicationCommand('identify_system;')).toEqual({ kind: 'IDENTIFY_SYSTEM' })
    expect(parseReplicationCommand('SHOW wal_level')).toEqual({ kind: 'SHOW', name: 'wal_level' })
  })

  it('CREATE_REPLICATION_SLOT variants', () => {
    expect(parseReplicationCommand('CREATE_REPLICATION_SLOT "My Slot" TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT')).toEqual({
      kind: 'CREATE_REPLICATION_SLOT', slot: 'My Slot', temporary: true, physical: false, plugin: 'pgoutput', snapshot: 'nothing',
    })
    expect(parseReplicationCommand('create_replication_slot Abc logical PGOUTPUT')).toMatchObject({ slot: 'abc', plugin: 'pgoutput', snapshot: 'export', temporary: false })
    expect(parseReplicationCommand("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing')")).toMatchObject({ snapshot: 'nothing' })
    expect(parseReplicationCommand('CREATE_REPLICATION_SLOT s LOGICAL pgoutput USE_SNAPSHOT')).toMatchObject({ snapshot: 'use' })
    expect(code(() => parseReplicationCommand("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'bogus')"))).toBe('22023')
  })

  it('DROP_REPLICATION_SLOT [WAIT]', () => {
    expect(parseReplicationCommand('DROP_REPLICATION_SLOT "x" WAIT')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'x', wait: true })
    expect(parseReplicationCommand('DROP_REPLICATION_SLOT x')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'x', wait: false })
  })

  it('START_REPLICATION with LSN and quoted option names', () => {
    const c = parseReplicationCommand(
      `START_REPLICATION SLOT "s" LOGICAL 0/16B3748 ("proto_version" '1', publication_names 'a,b', messages 'true', "binary")`,
    )
    expect(c).toMatchObject({ kind: 'START_REPLICATION', slot: 's', physical: false, startLsn: 0x16b3748n })
    if (c.kind !== 'START_REPLICATION') throw new Error('kind')
    expect([...c.options]).toEqual([
      ['proto_version', '1'],
      ['publication_names', 'a,b'],
      ['messages', 'true'],
      ['binary', null],
    ])
    expect(parseReplicationCommand('START_REPLICATION SLOT s LOGICAL FFFFFFFF/FFFFFFFF')).toMatchObject({ startLsn: 0xffffffffffffffffn })
  })

  it('hostile names are names or clean syntax errors, never SQL', () => {
    expect(parseReplicationCommand(`DROP_REPLICATION_SLOT "x'); DROP TABLE t; --"`)).toMatchObject({ slot: "x'); DROP TABLE t; --" })
    expect(parseReplicationCommand(`DROP_REPLICATION_SLOT "a""b"`)).toMatchObject({ slot: 'a"b' })
    expect(code(() => parseReplicationCommand(`DROP_REPLICATION_SLOT x'); DROP TABLE t; --`))).toBe('42601')
    expect(code(() => parseReplicationCommand(`DROP_REPLICATION_SLOT "unterminated`))).toBe('42601')
    expect(code(() => parseReplicationCommand(`START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1`))).toBe('42601')
    expect(code(() => parseReplicationCommand(`START_REPLICATION SLOT s LOGICAL 0/0 (a '1', a '2')`))).toBe('42601')
    expect(code(() => parseReplicationCommand(`IDENTIFY_SYSTEM extra`))).toBe('42601')
    expect(code(() => parseReplicationCommand(`DROP_REPLICATION_SLOT ""`))).toBe('42601')
  })

  it('tells replication commands from SQL', () => {
    expect(isReplicationCommand('  START_REPLICATION SLOT s LOGICAL 0/0')).toBe(true)
    expect(isReplicationCommand('SELECT 1')).toBe(false)
    expect(isReplicationCommand('show wal_level')).toBe(true)
  })
})

describe('parseStartOptions', () => {
  const opts = (o: Record<string, string | null>) => new Map(Object.entries(o))
  it('errors as PostgreSQL 15 pgoutput', () => {
    expect(code(() => parseStartOptions(opts({ publication_names: 'x' })))).toBe('0A000')
    expect(() => parseStartOptions(opts({ publication_names: 'x' }))).toThrow(
      'client sent proto_version=0 but we only support protocol 1 or higher',
    )
    expect(() => parseStartOptions(opts({ proto_version: '99', publication_names: 'x' }))).toThrow(
      'client sent proto_version=99 but we only support protocol 4 or lower',
    )
    expect(code(() => parseStartOptions(opts({ proto_version: '2', publication_names: 'x', two_phase: 'on' })))).toBe('0A000')
    expect(() => parseStartOptions(opts({ proto_version: '1' }))).toThrow('publication_names parameter missing')
    expect(code(() => parseStartOptions(opts({ proto_version: '1' })))).toBe('22023')
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: 'true' })).binary).toBe(true)
    expect(code(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: 'maybe' })))).toBe('22023')
    expect(code(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', messages: 'maybe' })))).toBe('22023')
    expect(code(() => parseStartOptions(opts({ proto_version: 'one', publication_names: 'x' })))).toBe('22023')
    expect(code(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', streaming: 'on' })))).toBe('0A000')
  })

  it('accepts what PostgreSQL accepts', () => {
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'a, "B c",D', messages: 'on', binary: 'false' }))).toEqual({
      protoVersion: 1,
      publications: ['a', 'B c', 'd'],
      messages: true,
      binary: false,
      streaming: 'off',
      twoPhase: false,
    })
  })

  it('splitIdentifiers', () => {
    expect(splitIdentifiers('a, "B c",D')).toEqual(['a', 'B c', 'd'])
    expect(splitIdentifiers('"x,y"')).toEqual(['x,y'])
    expect(code(() => splitIdentifiers('a,,b'))).toBe('42602')
    expect(code(() => splitIdentifiers('"open'))).toBe('42602')
    expect(splitIdentifiers('')).toEqual([])
  })
})
