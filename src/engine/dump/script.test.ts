import { describe, expect, it } from 'vitest'
import { splitScript } from './script'

describe('splitScript: a dump cut where psql would send it', () => {
  it('ends statements at semicolons outside quotes, dollar quotes, identifiers and comments', () => {
    const script = [
      `SET x = 'a;b'; -- a comment; not a statement`,
      `CREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $body$ BEGIN RETURN 'x;y'; END $body$;`,
      `SELECT $$;$$, "we;ird", E'it\\'s;', /* a /* nested; */ comment; */ 1;`,
      `SELECT 'it''s'`,
    ].join('\n')
    expect(splitScript(script)).toEqual([
      { kind: 'sql', text: `SET x = 'a;b';` },
      { kind: 'sql', text: `-- a comment; not a statement\nCREATE FUNCTION f() RETURNS text LANGUAGE plpgsql AS $body$ BEGIN RETURN 'x;y'; END $body$;` },
      { kind: 'sql', text: `SELECT $$;$$, "we;ird", E'it\\'s;', /* a /* nested; */ comment; */ 1;` },
      { kind: 'sql', text: `SELECT 'it''s'` },
    ])
  })

  it('takes the data lines after COPY ... FROM stdin up to \\., and psql commands on their own lines', () => {
    const script = `--\n-- a header\n--\n\n\\restrict abc\nCOPY public.t (a, b) FROM stdin;\n1\tx;y\n2\t\\N\n\\.\nCOPY public.e FROM stdin;\n\\.\nSELECT 1;\n\\unrestrict abc\n`
    expect(splitScript(script)).toEqual([
      { kind: 'meta', command: 'restrict abc' },
      { kind: 'copy', text: 'COPY public.t (a, b) FROM stdin;', data: '1\tx;y\n2\t\\N\n' },
      { kind: 'copy', text: 'COPY public.e FROM stdin;', data: '' },
      { kind: 'sql', text: 'SELECT 1;' },
      { kind: 'meta', command: 'unrestrict abc' },
    ])
  })
})
