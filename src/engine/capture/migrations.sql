-- Data directories written by earlier versions, moved to the current layout.

-- Until this version the change log was a table with a row per change: its
-- rows become one-change runs, and the capture functions are written anew.
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass('_tabgres.changes') AND relkind = 'r') THEN
    INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows, toast_unchanged)
      SELECT seq, 1, xid, relid, op, ARRAY[new_row], ARRAY[old_row], ARRAY[NULLIF(array_to_string(toast_unchanged, ','), '')]
        FROM _tabgres.changes;
    DROP TABLE _tabgres.changes;
    PERFORM _tabgres.define_capture(relid) FROM (SELECT DISTINCT relid FROM _tabgres.relation_versions) v
      WHERE _tabgres.is_user_table(relid);
  END IF;
END $$;

-- Tables tracked before TRUNCATE statements were grouped get their BEFORE TRUNCATE trigger.
DO $$ BEGIN
  PERFORM _tabgres.track(v.relid) FROM (SELECT DISTINCT relid FROM _tabgres.relation_versions) v
    WHERE _tabgres.is_user_table(v.relid)
      AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = v.relid AND tgname = '_tabgres_0_truncate');
END $$;
