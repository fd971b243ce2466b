// Walsender command tokenizer/parser (commands.ts) and pgoutput START_REPLICATION
// options (start-options.ts). Every error must be a PgError with a SQLSTATE.

import { describe, it, expect } from 'vitest'
import { PgError } from '../../protocol/errors'
import { isReplicationCommand, parseReplicationCommand, tokenize, type ReplicationCommand } from './commands'
import { parseStartOptions, PROTO_VERSION, splitIdentifiers } from './start-options'

function pgError(fn: () => unknown): PgError {
  try {
    fn()
  } catch (e) {
    expect(e).toBeInstanceOf(PgError)
    return e as PgError
  }
  throw new Error('expected a PgError')
}

const parse = parseReplicationCommand

function start(input: string): Extract<ReplicationCommand, { kind: 'START_REPLICATION' }> {
  const c = parse(input)
  if (c.kind !== 'START_REPLICATION') throw new Error(`not START_REPLICATION: ${c.kind}`)
  return c
}

const opts = (o: Record<string, string | null>) => new Map(Object.entries(o))

// ---------------------------------------------------------------------------

describe('tokenize', () => {
  it('produces words, quoted identifiers, strings, numbers, LSNs and punctuation with positions', () => {
    expect(tokenize(`Ab "Q""x" 'it''s' 12 0/1A ( ) , ;`)).toEqual([
      { kind: 'word', text: 'ab', upper: 'AB', pos: 0 },
      { kind: 'ident', text: 'Q"x', pos: 3 },
      { kind: 'string', text: "it's", pos: 10 },
      { kind: 'number', text: '12', pos: 18 },
      { kind: 'lsn', lsn: 0x1an, text: '0/1A', pos: 21 },
      { kind: 'punct', text: '(', pos: 26 },
      { kind: 'punct', text: ')', pos: 28 },
      { kind: 'punct', text: ',', pos: 30 },
      { kind: 'punct', text: ';', pos: 32 },
    ])
  })

  it('LSN tokens: both halves up to 8 hex digits, either case', () => {
    expect(tokenize('FFFFFFFF/FFFFFFFF')).toEqual([{ kind: 'lsn', lsn: 0xffffffffffffffffn, text: 'FFFFFFFF/FFFFFFFF', pos: 0 }])
    expect(tokenize('0/16b3748')[0]).toMatchObject({ kind: 'lsn', lsn: 0x16b3748n })
    expect(tokenize('1/0')[0]).toMatchObject({ kind: 'lsn', lsn: 0x1_0000_0000n })
  })

  it('words that start with hex letters are still words', () => {
    expect(tokenize('deadbeef abc_1 f$')).toEqual([
      { kind: 'word', text: 'deadbeef', upper: 'DEADBEEF', pos: 0 },
      { kind: 'word', text: 'abc_1', upper: 'ABC_1', pos: 9 },
      { kind: 'word', text: 'f$', upper: 'F$', pos: 15 },
    ])
  })

  it('skips whitespace (tabs, newlines) and -- comments', () => {
    expect(tokenize('\tA\n-- a comment; "ignored\nB -- trailing')).toEqual([
      { kind: 'word', text: 'a', upper: 'A', pos: 1 },
      { kind: 'word', text: 'b', upper: 'B', pos: 26 },
    ])
  })

  it('quoted identifiers and strings keep case, spaces and unicode', () => {
    expect(tokenize(`"My Slot 日本" 'x Y 😀'`)).toEqual([
      { kind: 'ident', text: 'My Slot 日本', pos: 0 },
      { kind: 'string', text: 'x Y 😀', pos: 13 },
    ])
  })

  it('a string may be empty, a quoted identifier may not', () => {
    expect(tokenize(`''`)).toEqual([{ kind: 'string', text: '', pos: 0 }])
    const e = pgError(() => tokenize(`""`))
    expect(e.code).toBe('42601')
    expect(e.message).toBe('zero-length delimited identifier')
  })

  it('unterminated quotes are 42601 with the opening position (1-based)', () => {
    const a = pgError(() => tokenize(`x "abc`))
    expect([a.code, a.message, a.position]).toEqual(['42601', 'unterminated quoted identifier', '3'])
    const b = pgError(() => tokenize(`x 'abc''`))
    expect([b.code, b.message, b.position]).toEqual(['42601', 'unterminated quoted string', '3'])
  })

  it('unexpected characters are 42601', () => {
    for (const bad of ['=', '*', '-', '.', '@', '\\']) {
      const e = pgError(() => tokenize(`a ${bad}`))
      expect(e.code).toBe('42601')
      expect(e.message).toBe(`syntax error at or near "${bad}"`)
      expect(e.position).toBe('3')
    }
  })
})

// ---------------------------------------------------------------------------

describe('isReplicationCommand', () => {
  it.each([
    'IDENTIFY_SYSTEM',
    '  identify_system;',
    '\nSTART_REPLICATION SLOT s LOGICAL 0/0',
    'create_replication_slot s logical pgoutput',
    'DROP_REPLICATION_SLOT s',
    'show wal_level',
    'READ_REPLICATION_SLOT s',
    'TIMELINE_HISTORY 1',
    'BASE_BACKUP',
  ])('%j is a replication command', (s) => {
    expect(isReplicationCommand(s)).toBe(true)
  })

  it.each(['SELECT 1', '', '   ', 'IDENTIFY_SYSTEMS', 'showx', '"IDENTIFY_SYSTEM"', 'BEGIN', 'SELECT pg_drop_replication_slot(\'s\')'])(
    '%j is not',
    (s) => {
      expect(isReplicationCommand(s)).toBe(false)
    },
  )
})

// ---------------------------------------------------------------------------

describe('IDENTIFY_SYSTEM, SHOW, READ_REPLICATION_SLOT', () => {
  it('IDENTIFY_SYSTEM in any case, with or without semicolon', () => {
    for (const s of ['IDENTIFY_SYSTEM', 'identify_system', 'Identify_System ;', '  IDENTIFY_SYSTEM;  ']) {
      expect(parse(s)).toEqual({ kind: 'IDENTIFY_SYSTEM' })
    }
  })

  it('IDENTIFY_SYSTEM with trailing tokens is 42601 at the token', () => {
    const e = pgError(() => parse('IDENTIFY_SYSTEM extra'))
    expect([e.code, e.message, e.position]).toEqual(['42601', 'syntax error at or near "extra"', '17'])
    expect(pgError(() => parse('IDENTIFY_SYSTEM;;')).code).toBe('42601')
  })

  it('SHOW folds unquoted names and keeps quoted ones', () => {
    expect(parse('SHOW Wal_Level')).toEqual({ kind: 'SHOW', name: 'wal_level' })
    expect(parse('SHOW "Wal_Level"')).toEqual({ kind: 'SHOW', name: 'Wal_Level' })
    expect(pgError(() => parse('SHOW')).message).toBe('syntax error at end of input')
    expect(pgError(() => parse("SHOW 'x'")).code).toBe('42601')
  })

  it('READ_REPLICATION_SLOT', () => {
    expect(parse('READ_REPLICATION_SLOT "S1"')).toEqual({ kind: 'READ_REPLICATION_SLOT', slot: 'S1' })
  })

  it('not a command at all is 42601', () => {
    expect(pgError(() => parse('SELECT 1')).code).toBe('42601')
    expect(pgError(() => parse('')).code).toBe('42601')
    expect(pgError(() => parse('"IDENTIFY_SYSTEM"')).code).toBe('42601')
  })
})

// ---------------------------------------------------------------------------

describe('CREATE_REPLICATION_SLOT', () => {
  it('quoted name, TEMPORARY, NOEXPORT_SNAPSHOT', () => {
    expect(parse('CREATE_REPLICATION_SLOT "My Slot" TEMPORARY LOGICAL pgoutput NOEXPORT_SNAPSHOT')).toEqual({
      kind: 'CREATE_REPLICATION_SLOT',
      slot: 'My Slot',
      temporary: true,
      physical: false,
      plugin: 'pgoutput',
      snapshot: 'nothing',
    })
  })

  it('the default snapshot action is export', () => {
    expect(parse('CREATE_REPLICATION_SLOT "oracle_a" LOGICAL pgoutput')).toEqual({
      kind: 'CREATE_REPLICATION_SLOT',
      slot: 'oracle_a',
      temporary: false,
      physical: false,
      plugin: 'pgoutput',
      snapshot: 'export',
    })
  })

  it('legacy snapshot keywords', () => {
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput EXPORT_SNAPSHOT')).toMatchObject({ snapshot: 'export' })
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput NOEXPORT_SNAPSHOT')).toMatchObject({ snapshot: 'nothing' })
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput USE_SNAPSHOT')).toMatchObject({ snapshot: 'use' })
  })

  it('(SNAPSHOT ...) option form, as PostgreSQL 15 clients send it', () => {
    expect(parse("CREATE_REPLICATION_SLOT \"oracle_a_p0\" TEMPORARY LOGICAL pgoutput (SNAPSHOT 'nothing')")).toEqual({
      kind: 'CREATE_REPLICATION_SLOT',
      slot: 'oracle_a_p0',
      temporary: true,
      physical: false,
      plugin: 'pgoutput',
      snapshot: 'nothing',
    })
    expect(parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'export')")).toMatchObject({ snapshot: 'export' })
    expect(parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (snapshot 'use')")).toMatchObject({ snapshot: 'use' })
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT nothing)')).toMatchObject({ snapshot: 'nothing' })
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput ()')).toMatchObject({ snapshot: 'export' })
  })

  it('keywords are case-insensitive; unquoted names fold to lower case', () => {
    expect(parse('create_replication_slot MySlot temporary logical PgOutput noexport_snapshot')).toEqual({
      kind: 'CREATE_REPLICATION_SLOT',
      slot: 'myslot',
      temporary: true,
      physical: false,
      plugin: 'pgoutput',
      snapshot: 'nothing',
    })
    expect(parse('CREATE_REPLICATION_SLOT s LOGICAL "PgOutput"')).toMatchObject({ plugin: 'PgOutput' })
  })

  it('a quoted keyword is a name, not a keyword', () => {
    expect(parse('CREATE_REPLICATION_SLOT "TEMPORARY" LOGICAL pgoutput')).toMatchObject({ slot: 'TEMPORARY', temporary: false })
    expect(pgError(() => parse('CREATE_REPLICATION_SLOT s "TEMPORARY" LOGICAL pgoutput')).code).toBe('42601')
  })

  it('PHYSICAL slots parse (the handler rejects them later)', () => {
    expect(parse('CREATE_REPLICATION_SLOT p PHYSICAL RESERVE_WAL')).toEqual({
      kind: 'CREATE_REPLICATION_SLOT',
      slot: 'p',
      temporary: false,
      physical: true,
      plugin: '',
      snapshot: 'export',
    })
  })

  it('other options: two_phase/failover false accepted, true unsupported, unknown rejected', () => {
    expect(parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (two_phase 'false', failover off)")).toMatchObject({ snapshot: 'export' })
    expect(pgError(() => parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (two_phase 'true')")).code).toBe('0A000')
    expect(pgError(() => parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (failover 'on')")).code).toBe('0A000')
    expect(pgError(() => parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput TWO_PHASE')).code).toBe('0A000')
    const e = pgError(() => parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (bogus 'x')"))
    expect([e.code, e.message]).toEqual(['42601', 'unrecognized option: bogus'])
    const v = pgError(() => parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'sometimes')"))
    expect([v.code, v.message]).toEqual(['22023', 'unrecognized value for CREATE_REPLICATION_SLOT option "snapshot": "sometimes"'])
  })

  // Regression (found by review against PostgreSQL's grammar and backend).
  it('a bare (TWO_PHASE) option means true and is rejected as unsupported', () => {
    expect(pgError(() => parse('CREATE_REPLICATION_SLOT s LOGICAL pgoutput (TWO_PHASE)')).code).toBe('0A000')
  })

  it('duplicate options are 42601 conflicting or redundant options', () => {
    const e = pgError(() => parse("CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'use', snapshot 'nothing')"))
    expect([e.code, e.message]).toEqual(['42601', 'conflicting or redundant options'])
  })

  it('syntax errors are 42601', () => {
    for (const bad of [
      'CREATE_REPLICATION_SLOT',
      'CREATE_REPLICATION_SLOT s',
      'CREATE_REPLICATION_SLOT s LOGICAL',
      'CREATE_REPLICATION_SLOT s TEMPORARY',
      'CREATE_REPLICATION_SLOT s LOGICAL pgoutput TEMPORARY',
      'CREATE_REPLICATION_SLOT s LOGICAL pgoutput NOEXPORT_SNAPSHOT extra',
      "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing'",
      "CREATE_REPLICATION_SLOT s LOGICAL pgoutput (SNAPSHOT 'nothing' two_phase 'false')",
      "CREATE_REPLICATION_SLOT 's' LOGICAL pgoutput",
      'CREATE_REPLICATION_SLOT 12 LOGICAL pgoutput',
    ]) {
      expect(pgError(() => parse(bad)).code, bad).toBe('42601')
    }
  })
})

// ---------------------------------------------------------------------------

describe('DROP_REPLICATION_SLOT', () => {
  it('with and without WAIT', () => {
    expect(parse('DROP_REPLICATION_SLOT x WAIT')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'x', wait: true })
    expect(parse('drop_replication_slot X wait;')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'x', wait: true })
    expect(parse('DROP_REPLICATION_SLOT "oracle_a"')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'oracle_a', wait: false })
    expect(parse('DROP_REPLICATION_SLOT "WAIT"')).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: 'WAIT', wait: false })
  })

  it('trailing garbage is 42601 at its position', () => {
    const e = pgError(() => parse('DROP_REPLICATION_SLOT x y'))
    expect([e.code, e.message, e.position]).toEqual(['42601', 'syntax error at or near "y"', '25'])
    expect(pgError(() => parse('DROP_REPLICATION_SLOT')).message).toBe('syntax error at end of input')
  })
})

// ---------------------------------------------------------------------------

describe('START_REPLICATION', () => {
  it('logical, with LSN and options in order', () => {
    const c = start(`START_REPLICATION SLOT "s" LOGICAL 0/16B3748 ("proto_version" '1', publication_names 'a,b', messages 'true')`)
    expect(c.slot).toBe('s')
    expect(c.physical).toBe(false)
    expect(c.startLsn).toBe(0x16b3748n)
    expect(c.startLsn).toBe(23803720n)
    expect(c.options).toBeInstanceOf(Map)
    expect([...c.options]).toEqual([
      ['proto_version', '1'],
      ['publication_names', 'a,b'],
      ['messages', 'true'],
    ])
  })

  it('the exact command the PostgreSQL 15 capture used', () => {
    const c = start(`START_REPLICATION SLOT "oracle_a" LOGICAL 0/0 ("proto_version" '1', "publication_names" 'pub_a,pub_a_ins', "messages" 'true')`)
    expect(c.startLsn).toBe(0n)
    expect(Object.fromEntries(c.options)).toEqual({ proto_version: '1', publication_names: 'pub_a,pub_a_ins', messages: 'true' })
  })

  it('high LSN halves and a non-zero upper half', () => {
    expect(start('START_REPLICATION SLOT s LOGICAL FFFFFFFF/FFFFFFFF').startLsn).toBe(0xffffffffffffffffn)
    expect(start('START_REPLICATION SLOT s LOGICAL 1A/2B').startLsn).toBe((0x1an << 32n) | 0x2bn)
  })

  it('no options gives an empty Map; () too', () => {
    expect(start('START_REPLICATION SLOT s LOGICAL 0/0').options.size).toBe(0)
    expect(start('START_REPLICATION SLOT s LOGICAL 0/0 ()').options.size).toBe(0)
  })

  it('quoted option names keep their case; unquoted ones fold', () => {
    const c = start(`START_REPLICATION SLOT s LOGICAL 0/0 ("Proto_Version" '1', MESSAGES 'true')`)
    expect([...c.options.keys()]).toEqual(['Proto_Version', 'messages'])
  })

  it('option values: string, number, word, quoted identifier, or absent', () => {
    const c = start(`START_REPLICATION SLOT s LOGICAL 0/0 (a 'x''y', b 1, c On, d "Q", e)`)
    expect([...c.options]).toEqual([
      ['a', "x'y"],
      ['b', '1'],
      ['c', 'on'],
      ['d', 'Q'],
      ['e', null],
    ])
  })

  it('duplicate option names are 42601', () => {
    const e = pgError(() => parse(`START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1', proto_version '1')`))
    expect([e.code, e.message]).toEqual(['42601', 'conflicting or redundant options'])
  })

  it('physical forms parse without a slot (the handler rejects them later)', () => {
    expect(parse('START_REPLICATION 0/0')).toEqual({ kind: 'START_REPLICATION', slot: null, physical: true, startLsn: 0n, options: new Map() })
    expect(parse('START_REPLICATION PHYSICAL 1/0')).toMatchObject({ physical: true, startLsn: 0x1_0000_0000n })
  })

  // Regression (found by review against PostgreSQL's grammar and backend).
  it('START_REPLICATION ... PHYSICAL 0/0 TIMELINE 1 parses', () => {
    expect(parse('START_REPLICATION SLOT s PHYSICAL 0/0 TIMELINE 1')).toMatchObject({ physical: true, slot: 's' })
  })

  it('syntax errors are 42601', () => {
    for (const bad of [
      'START_REPLICATION',
      'START_REPLICATION SLOT',
      'START_REPLICATION SLOT s LOGICAL',
      'START_REPLICATION SLOT s LOGICAL 0',
      'START_REPLICATION SLOT s LOGICAL x/y',
      'START_REPLICATION SLOT s LOGICAL 123456789/0', // upper half over 8 hex digits
      "START_REPLICATION SLOT s LOGICAL '0/0'",
      "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1'",
      "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1' publication_names 'a')",
      "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1',)",
      "START_REPLICATION SLOT s LOGICAL 0/0 ('proto_version' '1')",
      "START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1') extra",
    ]) {
      expect(pgError(() => parse(bad)).code, bad).toBe('42601')
    }
  })
})

// ---------------------------------------------------------------------------

describe('hostile input is data or a clean syntax error, never SQL', () => {
  const hostile = `x'); DROP TABLE t; --`

  it('double-quoted, it is just a name', () => {
    expect(parse(`DROP_REPLICATION_SLOT "${hostile}"`)).toEqual({ kind: 'DROP_REPLICATION_SLOT', slot: hostile, wait: false })
    expect(parse(`CREATE_REPLICATION_SLOT "${hostile}" LOGICAL pgoutput`)).toMatchObject({ slot: hostile })
    expect(start(`START_REPLICATION SLOT "${hostile}" LOGICAL 0/0`).slot).toBe(hostile)
    expect(parse(`DROP_REPLICATION_SLOT "a""b"`)).toMatchObject({ slot: 'a"b' })
  })

  it('unquoted, it is a 42601 PgError', () => {
    for (const cmd of [
      `DROP_REPLICATION_SLOT ${hostile}`,
      `CREATE_REPLICATION_SLOT ${hostile} LOGICAL pgoutput`,
      `START_REPLICATION SLOT ${hostile} LOGICAL 0/0`,
      `DROP_REPLICATION_SLOT x; DROP TABLE t`,
    ]) {
      const e = pgError(() => parse(cmd))
      expect(e.code, cmd).toBe('42601')
    }
  })

  it('inside an option string, it is just the value', () => {
    const c = start(`START_REPLICATION SLOT s LOGICAL 0/0 (publication_names 'a''); DROP TABLE t; --')`)
    expect(c.options.get('publication_names')).toBe(`a'); DROP TABLE t; --`)
    // ...and pgoutput rejects it as a publication list
    const e = pgError(() => parseStartOptions(c.options.set('proto_version', '1')))
    expect(e.message).toBe('invalid publication_names syntax')
  })

  it('unterminated quotes are 42601', () => {
    for (const cmd of [
      `DROP_REPLICATION_SLOT "unterminated`,
      `DROP_REPLICATION_SLOT "a""`,
      `START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1`,
      `START_REPLICATION SLOT s LOGICAL 0/0 (proto_version '1'')`,
    ]) {
      expect(pgError(() => parse(cmd)).code, cmd).toBe('42601')
    }
  })

  it('an empty quoted name is 42601', () => {
    expect(pgError(() => parse('DROP_REPLICATION_SLOT ""')).code).toBe('42601')
  })
})

// ---------------------------------------------------------------------------

describe('parseStartOptions', () => {
  it('accepts protocol 1 with publications and messages', () => {
    expect(PROTO_VERSION).toBe(4)
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'a,b', messages: 'true' }))).toEqual({
      protoVersion: 1,
      publications: ['a', 'b'],
      messages: true,
      binary: false,
      streaming: 'off',
      twoPhase: false,
    })
    expect(parseStartOptions(opts({ publication_names: 'a', proto_version: '1' }))).toEqual({
      protoVersion: 1,
      publications: ['a'],
      messages: false,
      binary: false,
      streaming: 'off',
      twoPhase: false,
    })
  })

  it('missing proto_version: 0A000, as PostgreSQL 15', () => {
    const e = pgError(() => parseStartOptions(opts({ publication_names: 'x' })))
    expect(e.code).toBe('0A000')
    expect(e.message).toBe('client sent proto_version=0 but we only support protocol 1 or higher')
  })

  it("proto_version '0': 0A000 too", () => {
    const e = pgError(() => parseStartOptions(opts({ proto_version: '0', publication_names: 'x' })))
    expect([e.code, e.message]).toEqual(['0A000', 'client sent proto_version=0 but we only support protocol 1 or higher'])
  })

  it("proto_version '5' and up: 0A000 ... protocol 4 or lower (PostgreSQL 16's maximum)", () => {
    for (const v of ['5', '99']) {
      const e = pgError(() => parseStartOptions(opts({ proto_version: v, publication_names: 'x' })))
      expect(e.code).toBe('0A000')
      expect(e.message).toBe(`client sent proto_version=${v} but we only support protocol 4 or lower`)
    }
  })

  it('proto_version 2, 3 and 4 are accepted, as a PostgreSQL 15/16 subscriber sends them', () => {
    for (const v of [2, 3, 4]) {
      expect(parseStartOptions(opts({ proto_version: String(v), publication_names: 'x' }))).toMatchObject({ protoVersion: v, streaming: 'off', twoPhase: false })
    }
  })

  it('non-numeric proto_version is 22023 invalid proto_version', () => {
    for (const v of ['one', '1.0', '-1', '', null, '99999999999']) {
      const e = pgError(() => parseStartOptions(new Map([['proto_version', v], ['publication_names', 'x']])))
      expect([e.code, e.message], String(v)).toEqual(['22023', 'invalid proto_version'])
    }
  })

  it('missing publication_names: 22023', () => {
    const e = pgError(() => parseStartOptions(opts({ proto_version: '1' })))
    expect(e.code).toBe('22023')
    expect(e.message).toBe('publication_names parameter missing')
  })

  it("binary takes PostgreSQL booleans (an absent value means true), with any protocol version", () => {
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: 'true' })).binary).toBe(true)
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: null })).binary).toBe(true)
    expect(parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: 'false' })).binary).toBe(false)
    expect(pgError(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', binary: 'maybe' }))).code).toBe('22023')
  })

  it('messages takes PostgreSQL booleans; an absent value means true', () => {
    for (const [v, want] of [
      ['true', true], ['on', true], ['yes', true], ['1', true], ['t', true], ['TRUE', true], [null, true],
      ['false', false], ['off', false], ['no', false], ['0', false], ['f', false], ['Off', false],
    ] as [string | null, boolean][]) {
      expect(parseStartOptions(new Map([['proto_version', '1'], ['publication_names', 'x'], ['messages', v]])).messages, String(v)).toBe(want)
    }
    const e = pgError(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', messages: 'maybe' })))
    expect([e.code, e.message]).toEqual(['22023', 'messages requires a Boolean value'])
  })

  it('streaming and two_phase: off accepted, on below the version that has it is 0A000 naming that version', () => {
    const base = { proto_version: '1', publication_names: 'x' }
    expect(parseStartOptions(opts({ ...base, streaming: 'off', two_phase: 'false' })).protoVersion).toBe(1)
    expect(parseStartOptions(opts({ ...base, proto_version: '2', streaming: 'on' })).streaming).toBe('on')
    expect(parseStartOptions(opts({ ...base, proto_version: '3', two_phase: 'on' })).twoPhase).toBe(true)
    expect(parseStartOptions(opts({ ...base, proto_version: '4', streaming: 'parallel' })).streaming).toBe('parallel')
    const p3 = pgError(() => parseStartOptions(opts({ ...base, proto_version: '3', streaming: 'parallel' })))
    expect([p3.code, p3.message]).toEqual(['0A000', 'requested proto_version=3 does not support parallel streaming, need 4 or higher'])
    // Options come in any order: the check waits for proto_version.
    expect(parseStartOptions(new Map([['streaming', 'on'], ['proto_version', '2'], ['publication_names', 'x']])).streaming).toBe('on')
    const s = pgError(() => parseStartOptions(opts({ ...base, streaming: 'on' })))
    expect([s.code, s.message]).toEqual(['0A000', 'requested proto_version=1 does not support streaming, need 2 or higher'])
    const p = pgError(() => parseStartOptions(opts({ ...base, streaming: 'parallel' })))
    expect([p.code, p.message]).toEqual(['0A000', 'requested proto_version=1 does not support parallel streaming, need 4 or higher'])
    const t = pgError(() => parseStartOptions(opts({ ...base, two_phase: 'on' })))
    expect([t.code, t.message]).toEqual(['0A000', 'requested proto_version=1 does not support two-phase commit, need 3 or higher'])
  })

  it("origin 'any' / 'none' accepted, other values 22023", () => {
    const base = { proto_version: '1', publication_names: 'x' }
    expect(parseStartOptions(opts({ ...base, origin: 'any' })).protoVersion).toBe(1)
    expect(parseStartOptions(opts({ ...base, origin: 'NONE' })).protoVersion).toBe(1)
    expect(pgError(() => parseStartOptions(opts({ ...base, origin: 'local' }))).code).toBe('22023')
  })

  it('unknown options are rejected', () => {
    const e = pgError(() => parseStartOptions(opts({ proto_version: '1', publication_names: 'x', bogus: '1' })))
    expect(e.message).toBe('unrecognized pgoutput option: bogus')
  })

  it('strict mode with no options is 0A000 proto_version=0', () => {
    expect(pgError(() => parseStartOptions(new Map())).message).toBe(
      'client sent proto_version=0 but we only support protocol 1 or higher',
    )
  })

  it('works on the Map that parseReplicationCommand produces', () => {
    const c = start(`START_REPLICATION SLOT "s" LOGICAL 0/16B3748 ("proto_version" '1', publication_names 'a,b', messages 'true')`)
    expect(parseStartOptions(c.options)).toEqual({ protoVersion: 1, publications: ['a', 'b'], messages: true, binary: false, streaming: 'off', twoPhase: false })
  })
})

// ---------------------------------------------------------------------------

describe('splitIdentifiers', () => {
  it("'a, \"B c\",D' gives ['a', 'B c', 'd']", () => {
    expect(splitIdentifiers('a, "B c",D')).toEqual(['a', 'B c', 'd'])
  })

  it('quoting, doubled quotes, commas inside quotes, surrounding whitespace', () => {
    expect(splitIdentifiers('"x,y"')).toEqual(['x,y'])
    expect(splitIdentifiers('"a""b"')).toEqual(['a"b'])
    expect(splitIdentifiers('  pub_a ,\tpub_b\n')).toEqual(['pub_a', 'pub_b'])
    expect(splitIdentifiers('PUB_A,pub_a_ins')).toEqual(['pub_a', 'pub_a_ins'])
    expect(splitIdentifiers('"Mixed"')).toEqual(['Mixed'])
    expect(splitIdentifiers('日本')).toEqual(['日本'])
  })

  it('malformed lists are invalid publication_names syntax', () => {
    for (const bad of ['a,,b', 'a,', ',a', '"open', 'a b', '"a"b', 'a "b"']) {
      const e = pgError(() => splitIdentifiers(bad))
      expect(e.message, bad).toBe('invalid publication_names syntax')
    }
  })

  // Regression (found by review against PostgreSQL's grammar and backend).
  it("an empty publication list ('') is an empty list, as in PostgreSQL", () => {
    expect(splitIdentifiers('')).toEqual([])
    expect(splitIdentifiers('   ')).toEqual([])
  })

  // Regression (found by review against PostgreSQL's grammar and backend).
  it("invalid publication_names syntax carries SQLSTATE 42602, as in PostgreSQL", () => {
    expect(pgError(() => splitIdentifiers('a,,b')).code).toBe('42602')
  })
})

// ---------------------------------------------------------------------------

describe('identifier folding', () => {
  it('ASCII letters fold to lower case', () => {
    expect(parse('DROP_REPLICATION_SLOT ABC_xyz_09')).toMatchObject({ slot: 'abc_xyz_09' })
  })

  // Regression (found by review against PostgreSQL's grammar and backend).
  it('non-ASCII letters are not folded, as in PostgreSQL with UTF-8', () => {
    expect(parse('SHOW ÄBC')).toEqual({ kind: 'SHOW', name: 'Äbc' })
  })
})
