-- The capture triggers' functions, generated per table (see log.sql for why
-- statement-level triggers with transition tables), and the writer-side
-- replica identity check.

-- Row capture functions are generated per table (by _tabgres.track, again
-- after each DDL of the table) because they name its columns:
-- - the stored row is ROW(r.c1, r.c2, ...)::text over the columns that
--   _tabgres.relation_shape lists (all but dropped and virtual generated
--   ones; PostgreSQL 18 cannot form a whole-row value with virtual columns
--   from a transition table);
-- - pgoutput sends an unchanged out-of-line TOAST value as 'u': it shows here
--   as an equal TOAST chunk id in the old and new transition rows (transition
--   tables keep the TOAST pointers);
-- - each pins the output settings only when the session changed them (head below).
CREATE OR REPLACE FUNCTION _tabgres.define_capture(rel oid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  rowexpr text;
  checks text;
  chunks text;
  kind text;
  op text;
  target text;
  source text;
  -- Registers the transaction on its first captured statement; pins the
  -- output settings only when the session changed them. The transition
  -- table's columns are user names: variables win over them (a column named
  -- x or tg_relid made the capture query ambiguous); columns are always r.%I.
  head constant text := $h$ #variable_conflict use_variable
    DECLARE x bigint := pg_current_xact_id()::text::bigint; saved text[];
    BEGIN
      IF current_setting('tabgres.xact', true) IS DISTINCT FROM x::text THEN PERFORM _tabgres.register(x); END IF;
      IF NOT (current_setting('DateStyle') = 'ISO, MDY' AND current_setting('TimeZone') = 'UTC'
  AND current_setting('IntervalStyle') = 'postgres' AND current_setting('extra_float_digits') = '1'
  AND current_setting('bytea_output') = 'hex') THEN saved := _tabgres.pin_output(); END IF;$h$;
  tail constant text := $t$
      IF saved IS NOT NULL THEN PERFORM _tabgres.restore_output(saved); END IF;
      RETURN NULL;
    END$t$;
BEGIN
  SELECT 'ROW(' || COALESCE(string_agg(format('r.%I', attname), ', ' ORDER BY pos), '') || ')::text',
         COALESCE(string_agg(format('CASE WHEN o.%1$I = n.%1$I THEN %2$s END', 'c' || pos, pos), ', ' ORDER BY pos)
                    FILTER (WHERE attlen = -1), ''),
         COALESCE(string_agg(format(', pg_column_toast_chunk_id(r.%I) AS %I', attname, 'c' || pos), '' ORDER BY pos)
                    FILTER (WHERE attlen = -1), '')
    INTO rowexpr, checks, chunks
    FROM (SELECT a.attname, a.attlen, row_number() OVER (ORDER BY a.attnum) AS pos
            FROM pg_attribute a
           WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> 'v') f;
  -- A zero-column row prints as "()": same as PostgreSQL's record output.
  IF rowexpr = 'ROW()::text' THEN rowexpr := $r$'()'::text$r$; END IF;

  -- Each body goes in as a %L literal, not dollar-quoted: it holds user
  -- identifiers, and a column named a$b$c closed a $b$ quote early (the rest
  -- of the name then ran as SQL).
  -- INSERT and DELETE differ only in the transition table and the column they fill.
  -- A statement that changed no row stores nothing (n > 0). A single-row
  -- statement, the common case, skips the aggregate: array_agg's setup cost
  -- it more per statement than the rest of the capture (x1.55 -> x1.77 of a
  -- bare parameterised INSERT); the EXISTS probe costs far less.
  FOR kind, op, target, source IN VALUES ('insert', 'I', 'new_rows', '_tabgres_new'), ('delete', 'D', 'old_rows', '_tabgres_old') LOOP
    EXECUTE format('CREATE OR REPLACE FUNCTION _tabgres.capture_%s_%s() RETURNS trigger LANGUAGE plpgsql AS %L', kind, rel, format($f$ %1$s
        IF EXISTS (SELECT FROM %5$I OFFSET 1) THEN
          INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, %2$I)
            SELECT _tabgres.reserve(a.n), a.n, x, TG_RELID, %3$L, a.v
              FROM (SELECT count(*)::int AS n, array_agg(%4$s) AS v FROM %5$I r) a;
        ELSE
          INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, %2$I)
            SELECT nextval('_tabgres.change_seq'), 1, x, TG_RELID, %3$L, ARRAY[%4$s] FROM %5$I r;
        END IF;
      %6$s $f$, head, target, op, rowexpr, source, tail));
  END LOOP;

  -- Old and new transition rows are paired in lockstep, in transition-table
  -- order. A one-row UPDATE (most of them) pairs its only rows without the
  -- numbering and the aggregates, as INSERT and DELETE do above.
  EXECUTE format('CREATE OR REPLACE FUNCTION _tabgres.capture_update_%s() RETURNS trigger LANGUAGE plpgsql AS %L', rel, format($f$ %1$s
      IF EXISTS (SELECT FROM _tabgres_new OFFSET 1) THEN
        INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows, toast_unchanged)
          SELECT _tabgres.reserve(a.n), a.n, x, TG_RELID, 'U', a.nv, a.ov, a.tv
            FROM (SELECT count(*)::int AS n, array_agg(n.t ORDER BY i) AS nv, array_agg(o.t ORDER BY i) AS ov,
                         %2$s AS tv
                    FROM (SELECT row_number() OVER () AS i, %4$s AS t %5$s FROM _tabgres_new r) n
                    JOIN (SELECT row_number() OVER () AS i, %4$s AS t %5$s FROM _tabgres_old r) o USING (i)) a;
      ELSE
        INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows, toast_unchanged)
          SELECT nextval('_tabgres.change_seq'), 1, x, TG_RELID, 'U', ARRAY[n.t], ARRAY[o.t], %3$s
            FROM (SELECT %4$s AS t %5$s FROM _tabgres_new r) n, (SELECT %4$s AS t %5$s FROM _tabgres_old r) o;
      END IF;
    %6$s $f$,
    head,
    CASE WHEN checks = '' THEN 'NULL::text[]'
         ELSE format($a$array_agg(NULLIF(array_to_string(ARRAY[%s]::int2[], ','), '') ORDER BY i)$a$, checks) END,
    CASE WHEN checks = '' THEN 'NULL::text[]'
         ELSE format($a$ARRAY[NULLIF(array_to_string(ARRAY[%s]::int2[], ','), '')]$a$, checks) END,
    rowexpr, chunks, tail));
END $$;

-- TRUNCATE: PostgreSQL logs one record per statement, with every table it
-- truncated (CASCADE's included) and the CASCADE / RESTART IDENTITY options,
-- and pgoutput sends one Truncate message from it. Statement triggers fire
-- once per table, so the statement is found from their order: TRUNCATE fires
-- every table's BEFORE trigger, then every table's AFTER trigger, and the
-- next TRUNCATE statement starts over. The BEFORE triggers collect the
-- tables in a transaction-local setting; the first AFTER trigger writes the
-- statement's one row (new_rows: record text of flags and the table OIDs in
-- the statement's order) and marks it written, so the others write nothing.
CREATE OR REPLACE FUNCTION _tabgres.before_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE s text := current_setting('tabgres.truncate', true);
BEGIN
  IF s IS NULL OR s NOT LIKE 'b%' THEN s := 'b'; END IF;
  PERFORM set_config('tabgres.truncate', s || ' ' || TG_RELID, true);
  RETURN NULL;
END $$;

-- The options are not visible to a trigger: they are read from the
-- statement's text, the part of current_query() that is a TRUNCATE naming
-- the first table (or the only TRUNCATE). A TRUNCATE run inside a function
-- has no such text: its options read as none.
CREATE OR REPLACE FUNCTION _tabgres.truncate_flags(rel oid) RETURNS int
LANGUAGE plpgsql STABLE AS $$
DECLARE
  name text := lower((SELECT relname FROM pg_class WHERE oid = rel));
  stmt text;
  part text;
BEGIN
  FOR part IN SELECT lower(p) FROM regexp_split_to_table(current_query(), ';') p WHERE p ~* '\mtruncate\M' LOOP
    IF stmt IS NULL OR (position(name IN part) > 0 AND position(name IN stmt) = 0) THEN stmt := part; END IF;
  END LOOP;
  IF stmt IS NULL THEN RETURN 0; END IF;
  RETURN CASE WHEN stmt ~ '\mcascade\M' THEN 1 ELSE 0 END
       | CASE WHEN stmt ~ '\mrestart\s+identity\M' THEN 2 ELSE 0 END;
END $$;

CREATE OR REPLACE FUNCTION _tabgres.capture_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  x bigint;
  s text := current_setting('tabgres.truncate', true);
  rels text;
BEGIN
  IF s = 'a' THEN RETURN NULL; END IF;  -- this statement's row is written
  x := _tabgres.xact();
  -- Without the BEFORE trigger's list (a table tracked before it existed) the row names this table alone.
  rels := CASE WHEN s LIKE 'b %' THEN substr(s, 3) ELSE TG_RELID::text END;
  INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows)
    VALUES (nextval('_tabgres.change_seq'), 1, x, TG_RELID, 'T',
            ARRAY[ROW(_tabgres.truncate_flags(split_part(rels, ' ', 1)::oid), rels)::text]);
  IF s LIKE 'b %' THEN PERFORM set_config('tabgres.truncate', 'a', true); END IF;
  RETURN NULL;
END $$;

-- PostgreSQL refuses UPDATE/DELETE on a table that publishes them but has no
-- usable replica identity (CheckCmdReplicaIdentity); emulate it on the writer.
CREATE OR REPLACE FUNCTION _tabgres.check_identity() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  ri "char";
  has_key boolean;
BEGIN
  SELECT c.relreplident,
         EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid
                  AND ((c.relreplident = 'd' AND i.indisprimary)
                    OR (c.relreplident = 'i' AND i.indisreplident)))
    INTO ri, has_key
    FROM pg_class c WHERE c.oid = TG_RELID;
  IF ri = 'f' OR (ri IN ('d', 'i') AND has_key) THEN RETURN NULL; END IF;
  IF EXISTS (SELECT 1 FROM pg_publication p
              JOIN pg_publication_tables pt ON pt.pubname = p.pubname
             WHERE pt.schemaname = TG_TABLE_SCHEMA AND pt.tablename = TG_TABLE_NAME
               AND CASE TG_OP WHEN 'UPDATE' THEN p.pubupdate ELSE p.pubdelete END) THEN
    IF TG_OP = 'UPDATE' THEN
      RAISE EXCEPTION 'cannot update table "%" because it does not have a replica identity and publishes updates', TG_TABLE_NAME
        USING ERRCODE = '55000', HINT = 'To enable updating the table, set REPLICA IDENTITY using ALTER TABLE.';
    ELSE
      RAISE EXCEPTION 'cannot delete from table "%" because it does not have a replica identity and publishes deletes', TG_TABLE_NAME
        USING ERRCODE = '55000', HINT = 'To enable deleting from the table, set REPLICA IDENTITY using ALTER TABLE.';
    END IF;
  END IF;
  RETURN NULL;
END $$;
