-- What the replication reader (replication/reader.ts) and people read.

-- The change log with one row per change, for reading by hand and in tests.
CREATE OR REPLACE VIEW _tabgres.changes AS
  SELECT seq, xid, relid, op, new_row, old_row, string_to_array(toast_unchanged, ',')::int2[] AS toast_unchanged
    FROM _tabgres.changes_after(0, NULL);

-- One read of the replication reader (replication/reader.ts parses it): up to
-- lim changes after seq "after" as one row of three values, not one row per
-- change (PGlite turns every DataRow into JavaScript objects, which costs
-- several times the SQL that reads a change):
-- - how many changes;
-- - the changes, each "seq xid relid op toast " then its new and old row
--   (record text, or "-" for none; a message's content and prefix wrapped as
--   one-field records), separated by newlines: a record literal ends itself,
--   so no delimiter is needed (replication/record.ts);
-- - "xid last_seq commit_us" of each transaction among them, once each.
-- A PL/pgSQL function so the plan is cached: planning this query costs more
-- than running it for a small batch.
CREATE OR REPLACE FUNCTION _tabgres.read_batch(after bigint, lim int)
RETURNS TABLE (batch_count bigint, batch_changes text, batch_xacts text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  WITH b AS MATERIALIZED (SELECT * FROM _tabgres.changes_after(after, lim))
  SELECT (SELECT count(*) FROM b),
    (SELECT string_agg(b.seq || ' ' || b.xid || ' ' || b.relid || ' ' || b.op::text || ' '
              || COALESCE(b.toast_unchanged, '') || ' '
              || CASE WHEN b.op IN ('M', 'm') THEN ROW(b.new_row)::text || ROW(b.old_row)::text
                      ELSE COALESCE(b.new_row, '-') || COALESCE(b.old_row, '-') END,
              E'\n' ORDER BY b.seq) FROM b),
    (SELECT string_agg(x.xid || ' ' || x.last_seq || ' '
              || (extract(epoch FROM x.commit_time - timestamptz '2000-01-01 00:00:00+00') * 1000000)::bigint, ' ')
       FROM (SELECT DISTINCT b.xid FROM b) d
       CROSS JOIN LATERAL (SELECT * FROM _tabgres.xacts x WHERE x.xid = d.xid) x);
END $$;
