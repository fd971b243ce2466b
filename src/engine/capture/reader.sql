-- What the replication reader (replication/reader.ts) and people read.

-- The change log with one row per change, for reading by hand and in tests.
CREATE OR REPLACE VIEW _tabgres.changes AS
  SELECT seq, xid, relid, op, new_row, old_row, string_to_array(toast_unchanged, ',')::int2[] AS toast_unchanged
    FROM _tabgres.changes_after(0, NULL);

-- One read of the replication reader (replication/reader.ts parses it): up to
-- lim changes after seq "after" as one row of four values, not one row per
-- change (PGlite turns every DataRow into JavaScript objects, which costs
-- several times the SQL that reads a change):
-- - how many changes;
-- - the changes, each "seq xid relid op toast " then its new and old row
--   (record text, or "-" for none; a message's content and prefix wrapped as
--   one-field records), separated by newlines: a record literal ends itself,
--   so no delimiter is needed (replication/record.ts);
-- - "xid last_seq commit_us" of each transaction among them, once each;
-- - the non-transactional messages in the same span of sequence numbers,
--   each "seq xid prefix content" (hex) and a newline
--   (replication/message-files.ts). The directory is listed only when the
--   span has numbers without a change-log row: a message or a rollback took them.
-- A PL/pgSQL function so the plan is cached: planning this query costs more
-- than running it for a small batch.
DO $$ BEGIN
  -- Earlier versions returned three columns; the return type cannot be replaced in place.
  IF EXISTS (SELECT 1 FROM pg_proc WHERE oid = to_regprocedure('_tabgres.read_batch(bigint,integer)')
              AND array_length(proallargtypes, 1) = 5) THEN
    DROP FUNCTION _tabgres.read_batch(bigint, int);
  END IF;
END $$;
CREATE OR REPLACE FUNCTION _tabgres.read_batch(after bigint, lim int)
RETURNS TABLE (batch_count bigint, batch_changes text, batch_xacts text, batch_messages text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH b AS MATERIALIZED (SELECT * FROM _tabgres.changes_after(after, lim)),
       c AS (SELECT count(*) AS n, max(b.seq) AS hi FROM b),
       -- The span this batch covers: to its last change when full, else to the end of the log.
       t AS (SELECT c.n, CASE WHEN c.n < lim THEN _tabgres.position() ELSE c.hi END AS top FROM c)
  SELECT t.n,
    (SELECT string_agg(b.seq || ' ' || b.xid || ' ' || b.relid || ' ' || b.op::text || ' '
              || COALESCE(b.toast_unchanged, '') || ' '
              || CASE WHEN b.op IN ('M', 'm') THEN ROW(b.new_row)::text || ROW(b.old_row)::text
                      ELSE COALESCE(b.new_row, '-') || COALESCE(b.old_row, '-') END,
              E'\n' ORDER BY b.seq) FROM b),
    (SELECT string_agg(x.xid || ' ' || x.last_seq || ' '
              || (extract(epoch FROM x.commit_time - timestamptz '2000-01-01 00:00:00+00') * 1000000)::bigint, ' ')
       FROM (SELECT DISTINCT b.xid FROM b) d
       CROSS JOIN LATERAL (SELECT * FROM _tabgres.xacts x WHERE x.xid = d.xid) x),
    CASE WHEN t.top - after > t.n THEN
      (SELECT string_agg(f.name || ' ' || pg_read_file('pg_tabgres/messages/' || f.name), '' ORDER BY f.name)
         FROM pg_ls_dir('pg_tabgres/messages', true, false) AS f(name)
        WHERE f.name > lpad(after::text, 20, '0') AND f.name <= lpad(t.top::text, 20, '0'))
    END
  FROM t;
END $$;

-- Values as a walsender session with its own output settings sees them
-- (replication/output-style.ts): PostgreSQL's walsender runs each type's
-- output function under the replication connection's DateStyle,
-- IntervalStyle, TimeZone, extra_float_digits and bytea_output, while the
-- change log keeps them in the canonical settings. Each value (vals[i], of
-- type types[i]) is read back as its type and printed under `settings`
-- (those five, in that order), set for this statement's transaction only.
-- The canonical text reads back the same under any of them (ISO dates,
-- explicit zone offsets and interval signs, hex bytea).
CREATE OR REPLACE FUNCTION _tabgres.restyle(settings text[], types regtype[], vals text[])
RETURNS TABLE (i int, v text)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  out text[] := vals;
  t regtype;
  idx int[];
  res text[];
BEGIN
  PERFORM set_config('DateStyle', settings[1], true), set_config('IntervalStyle', settings[2], true),
    set_config('TimeZone', settings[3], true), set_config('extra_float_digits', settings[4], true),
    set_config('bytea_output', settings[5], true);
  FOR t IN SELECT DISTINCT x FROM unnest(types) x LOOP
    SELECT array_agg(k ORDER BY k) INTO idx FROM generate_subscripts(types, 1) k WHERE types[k] = t;
    EXECUTE format('SELECT array_agg((($1)[k])::%s::text ORDER BY k) FROM unnest($2) k', t) INTO res USING vals, idx;
    FOR k IN 1 .. array_length(idx, 1) LOOP out[idx[k]] := res[k]; END LOOP;
  END LOOP;
  RETURN QUERY SELECT o.n::int, o.x FROM unnest(out) WITH ORDINALITY AS o(x, n) ORDER BY o.n;
END $$;
