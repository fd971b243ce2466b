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
