// parseRecord: PostgreSQL record (composite) text output, as record_out writes it.
// Unit cases by hand, then validation against real record_out output from PGlite.

import { describe, it, expect, beforeAll, afterAll } from 'vitest'
import { PGlite } from '@electric-sql/pglite'
import { parseRecord, parseRecordAt } from './record'
import { installChangeTracking } from '../install'

describe('parseRecord (hand-written literals)', () => {
  it('the example from the module docs', () => {
    expect(parseRecord('(1,"a b",,"x""y","back\\\\slash")')).toEqual(['1', 'a b', null, 'x"y', 'back\\slash'])
  })

  it('empty unquoted field is NULL, "" is the empty string', () => {
    expect(parseRecord('(,)')).toEqual([null, null])
    expect(parseRecord('("",)')).toEqual(['', null])
    expect(parseRecord('(,"")')).toEqual([null, ''])
    expect(parseRecord('(a,,b)')).toEqual(['a', null, 'b'])
    expect(parseRecord('(,,,)')).toEqual([null, null, null, null])
  })

  it('"()" is one NULL field', () => {
    expect(parseRecord('()')).toEqual([null])
  })

  it('a single field', () => {
    expect(parseRecord('(42)')).toEqual(['42'])
    expect(parseRecord('("")')).toEqual([''])
    expect(parseRecord('(" ")')).toEqual([' '])
  })

  it('quoted fields with separators and parentheses inside', () => {
    expect(parseRecord('("a,b","(x)",")","(")')).toEqual(['a,b', '(x)', ')', '('])
  })

  it('doubled quotes and backslash escapes, including at the edges', () => {
    expect(parseRecord('("""")')).toEqual(['"'])
    expect(parseRecord('("""a""")')).toEqual(['"a"'])
    expect(parseRecord('("\\\\")')).toEqual(['\\'])
    expect(parseRecord('("\\"")')).toEqual(['"'])
    expect(parseRecord('("a\\\\""b")')).toEqual(['a\\"b'])
    expect(parseRecord('("\\\\\\\\",x)')).toEqual(['\\\\', 'x'])
  })

  it('newlines and unicode inside quotes', () => {
    expect(parseRecord('("line1\nline2","日本 😀")')).toEqual(['line1\nline2', '日本 😀'])
  })

  it('unquoted unicode', () => {
    expect(parseRecord('(日本,😀)')).toEqual(['日本', '😀'])
  })

  it('malformed literals throw', () => {
    for (const bad of ['', '(', ')', 'x', '1,2', '(1,2', '1,2)', '("abc)', '("a"b)', '("a",', '("a\\)']) {
      expect(() => parseRecord(bad), bad).toThrow()
    }
  })
})

// ---------------------------------------------------------------------------
// Against real PostgreSQL output.

describe('parseRecord against PGlite record_out', () => {
  let db: PGlite

  beforeAll(async () => {
    db = new PGlite()
    await db.exec(`
      CREATE TYPE pair AS (a text, b int);
      CREATE TABLE tricky (
        id int,
        t text,
        v varchar(40),
        c char(4),
        n numeric,
        b bool,
        arr text[],
        iarr int[],
        j json,
        jb jsonb,
        by bytea,
        ts timestamptz,
        p pair,
        e text
      );
    `)
    const rows: unknown[][] = [
      [1, 'plain', 'v', 'ab', '1.50', true, ['x', 'y'], [1, 2], '{"a":1}', '{"a": 1}', '\\x00ff', '2024-01-02 03:04:05+00', '(x,1)', 'e'],
      [2, 'say "hi"', 'it\'s', 'q"', '-0.000001', false, ['a b', 'c,d', null, 'q"uote', 'back\\slash'], [], '{"k": "v \\"q\\" \\\\"}', '{"k": [1, "two", null]}', '\\x', '1999-12-31 23:59:59.999999+00', '("a,b",2)', ''],
      [3, 'back\\slash\\\\double', 'a,b', '(,)', null, null, null, null, null, null, null, null, null, null],
      [4, 'comma, paren ( ) and {braces}', ' lead', 'x  ', 'NaN', true, ['{}', '', 'NULL'], [null, 3], '[]', '[]', '\\x5c22', 'infinity', '(,)', ' '],
      [5, 'line1\nline2\r\ntab\there', '\n', '\t', '1e-30', false, ['multi\nline'], [2147483647], '"str"', '"str"', '\\x0a0d', '-infinity', '("",)', 'NULL'],
      [6, '', '', '', '0', true, [''], [0], 'null', 'null', '\\x', '2000-01-01 00:00:00+00', '("q""uote",-1)', '""'],
      [7, null, null, null, null, null, null, null, null, null, null, null, null, null],
      [8, 'unicode: héllo wörld ✓ 日本語 😀 👨‍👩‍👧', 'ñ', 'ü', '3.14159265358979323846', true, ['日本', '😀'], [1], '{"ü": "✓"}', '{"😀": 1}', '\\xf09f9880', '2024-02-29 12:00:00+00', '(日本,8)', '✓'],
      [9, '"', '\\', ',', '100', false, ['"', '\\', ','], [9], '"\\\\"', '"\\""', '\\x22', '2024-01-01 00:00:00+00', '("\\\\",9)', ')'],
      [10, '(', ')', '()', '1', true, ['(', ')'], [10], '{}', '{}', '\\x28', '2024-01-01 00:00:00+00', '("(",10)', '('],
    ]
    // Every parameter is sent as text and cast server-side, so the values above
    // are exactly PostgreSQL input literals (arrays are built as array literals).
    const arrayLiteral = (xs: (string | number | null)[]) =>
      '{' + xs.map((x) => (x === null ? 'NULL' : '"' + String(x).replace(/[\\"]/g, (ch) => '\\' + ch) + '"')).join(',') + '}'
    const types = ['int', 'text', 'varchar(40)', 'char(4)', 'numeric', 'bool', 'text[]', 'int[]', 'json', 'jsonb', 'bytea', 'timestamptz', 'pair', 'text']
    const placeholders = types.map((t, i) => `$${i + 1}::text::${t}`).join(', ')
    for (const r of rows) {
      const params = r.map((v) => (v === null ? null : Array.isArray(v) ? arrayLiteral(v) : String(v)))
      await db.query(`INSERT INTO tricky VALUES (${placeholders})`, params)
    }
  }, 60_000)

  afterAll(async () => {
    await db?.close()
  })

  // The row alias is x, not t: the table has a column named t, and `t::text`
  // would then mean the column, not the whole row.
  const cols = ['id', 't', 'v', 'c', 'n', 'b', 'arr', 'iarr', 'j', 'jb', 'by', 'ts', 'p', 'e']

  // Expected values are each column's type output function (format's %s), which
  // is what record_out and pgoutput use; a ::text cast differs for some types
  // (char(n) drops its padding, bool prints 'true'). num_nulls, not IS NULL:
  // a composite whose fields are all NULL IS NULL but is a value, "(,)".
  it('parseRecord(row::text) equals each column\'s output-function text, and ::text where they agree', async () => {
    const sel = cols
      .map(
        (c) =>
          `CASE WHEN num_nulls(x.${c}) = 1 THEN NULL ELSE format('%s', x.${c}) END AS out_${c}, ` +
          `CASE WHEN num_nulls(x.${c}) = 1 THEN NULL ELSE x.${c}::text END AS txt_${c}`,
      )
      .join(', ')
    const res = await db.query<Record<string, string | null>>(`SELECT x::text AS r, ${sel} FROM tricky x ORDER BY id`)
    expect(res.rows.length).toBe(10)
    for (const row of res.rows) {
      const fields = parseRecord(row.r as string)
      expect(fields, row.r as string).toEqual(cols.map((c) => row[`out_${c}`]))
      // ::text is the output function for every type here except bool and char(n)
      for (const [i, c] of cols.entries()) {
        if (c !== 'b' && c !== 'c') expect(fields[i], `${row.r} column ${c}`).toBe(row[`txt_${c}`])
      }
    }
  }, 60_000)

  it('bool and char(n): ::text differs from the output function record_out uses', async () => {
    const res = await db.query<Record<string, string>>(`SELECT x::text AS r, x.b::text AS b, x.c::text AS c FROM tricky x WHERE id = 1`)
    const fields = parseRecord(res.rows[0].r)
    expect([res.rows[0].b, res.rows[0].c]).toEqual(['true', 'ab'])
    expect([fields[5], fields[3]]).toEqual(['t', 'ab  '])
  }, 60_000)

  it('a composite column whose fields are all NULL is "(,)", not NULL', async () => {
    const res = await db.query<{ r: string }>(`SELECT x::text AS r FROM tricky x WHERE id = 4`)
    expect(parseRecord(res.rows[0].r)[12]).toBe('(,)')
  }, 60_000)

  it('the all-NULL-except-id row parses to nulls', async () => {
    const res = await db.query<{ r: string }>(`SELECT x::text AS r FROM tricky x WHERE id = 7`)
    expect(parseRecord(res.rows[0].r)).toEqual(['7', ...Array(cols.length - 1).fill(null)])
  }, 60_000)

  it('empty strings and NULLs are distinguished', async () => {
    const res = await db.query<{ r: string }>(`SELECT x::text AS r FROM tricky x WHERE id = 6`)
    const fields = parseRecord(res.rows[0].r)
    expect(fields[1]).toBe('')
    expect(fields[2]).toBe('')
    expect(fields[13]).toBe('""')
  }, 60_000)

  it('ROW() constructors of scalar literals, including a single NULL column', async () => {
    const queries: [string, (string | null)[]][] = [
      [`SELECT ROW(NULL::text)::text AS r`, [null]],
      [`SELECT ROW(''::text)::text AS r`, ['']],
      [`SELECT ROW(1, NULL, '', 'a"b', 'c\\d', ' ', E'\\n')::text AS r`, ['1', null, '', 'a"b', 'c\\d', ' ', '\n']],
    ]
    for (const [sql, want] of queries) {
      const res = await db.query<{ r: string }>(sql)
      expect(parseRecord(res.rows[0].r), `${sql} -> ${res.rows[0].r}`).toEqual(want)
    }
  }, 60_000)

  it('a long value with many quotes and backslashes', async () => {
    const v = 'a"b\\c,(d)\n'.repeat(5_000)
    const res = await db.query<{ r: string; t: string }>(`SELECT ROW($1::text, 2)::text AS r, $1::text AS t`, [v])
    expect(parseRecord(res.rows[0].r)).toEqual([res.rows[0].t, '2'])
    expect(res.rows[0].t).toBe(v)
  }, 60_000)
})

// ---------------------------------------------------------------------------
// Records read out of a longer text (the reader's batches), and the capture
// writing canonical text whatever the writer session's output settings.

describe('parseRecordAt', () => {
  it('reads consecutive literals with no delimiter and returns each end', () => {
    const text = '(1,"a)b",)("x""y",(z))(' + ')-'
    const a: (string | null)[] = []
    const i = parseRecordAt(text, 0, a)
    expect(a).toEqual(['1', 'a)b', null])
    const b: (string | null)[] = []
    const j = parseRecordAt(text, i, b)
    // An unquoted field never holds a parenthesis: "(z" ends at the first ")".
    expect(text[j - 1]).toBe(')')
    expect(b[0]).toBe('x"y')
  })

  it('rejects a literal that does not start at the given index', () => {
    expect(() => parseRecordAt('-(1)', 0, [])).toThrow()
  })
})

describe('capture under non-default output settings', () => {
  let db: PGlite

  beforeAll(async () => {
    db = new PGlite()
    await db.exec(`CREATE TABLE s (id int PRIMARY KEY, ts timestamptz, d date, i interval, f float8, b bytea, tsa timestamptz[])`)
    await installChangeTracking(db)
  }, 60_000)

  afterAll(async () => {
    await db?.close()
  })

  const insert = (id: number) =>
    `INSERT INTO s VALUES (${id}, '2024-01-02 03:04:05.5+00', '2024-01-02', '1 day 2 hours', 0.1, '\\x0102', ARRAY['2024-01-02 03:04:05+00'::timestamptz])`
  const canonical = (id: number, f = '0.1') => [id, '2024-01-02 03:04:05.5+00', '2024-01-02', '1 day 02:00:00', f, '\\x0102', '{"2024-01-02 03:04:05+00"}'].map(String)

  it('a writer with German dates, Tokyo time, SQL-standard intervals, 3 float digits and escaped bytea still captures canonical text, and keeps its settings', async () => {
    await db.exec(insert(1))
    await db.exec(`SET datestyle = 'German'; SET timezone = 'Asia/Tokyo'; SET intervalstyle = 'sql_standard';
                   SET extra_float_digits = 3; SET bytea_output = 'escape';`)
    await db.exec(`BEGIN; ${insert(2)}; UPDATE s SET f = 0.2 WHERE id = 2; DELETE FROM s WHERE id = 1; COMMIT;`)
    const settings = await db.query<Record<string, string>>(
      `SELECT current_setting('DateStyle') a, current_setting('TimeZone') b, current_setting('IntervalStyle') c,
              current_setting('extra_float_digits') d, current_setting('bytea_output') e`,
    )
    expect(settings.rows[0]).toEqual({ a: 'German, DMY', b: 'Asia/Tokyo', c: 'sql_standard', d: '3', e: 'escape' })
    const rows = await db.query<{ op: string; new_row: string | null; old_row: string | null }>(
      `SELECT op, new_row, old_row FROM _tabgres.changes ORDER BY seq`,
    )
    const parsed = rows.rows.map((r) => [r.op, r.new_row && parseRecord(r.new_row), r.old_row && parseRecord(r.old_row)])
    expect(parsed).toEqual([
      ['I', canonical(1), null],
      ['I', canonical(2), null],
      ['U', canonical(2, '0.2'), canonical(2)],
      ['D', null, canonical(1)],
    ])
  }, 60_000)

  it('failed and rolled-back captures under pinned settings leave the session settings as they were', async () => {
    await expect(db.exec(`INSERT INTO s VALUES (2, now(), now(), '1 day', 1, '', NULL)`)).rejects.toThrow()
    await db.exec(`BEGIN; ${insert(3)}; ROLLBACK;`)
    const r = await db.query<{ ds: string }>(`SELECT current_setting('DateStyle') ds`)
    expect(r.rows[0].ds).toBe('German, DMY')
    await db.exec('RESET ALL')
  }, 60_000)
})
