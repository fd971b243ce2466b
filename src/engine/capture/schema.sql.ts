// SQL that installs tabgres's change capture inside PGlite.
//
// Why this shape:
// - Statement-level AFTER triggers with transition tables capture a whole
//   statement with one INSERT ... SELECT (a row trigger would pay a PL/pgSQL
//   call per row). Each row is stored as record text, ROW(r.col, ...)::text:
//   every field is the type's text output function, exactly what pgoutput
//   sends. (Never `r::text`: a column named `r` would be captured instead.)
// - Stored text must be canonical whatever the writer session set. Capture
//   functions test the output settings and, only when a session changed
//   them, pin them around their INSERT (set_config). SET clauses on the
//   functions would do the same but cost more per statement than the capture
//   INSERT itself; so would a trigger WHEN (planned anew for every statement).
// - One INSERT of one row per statement does all the work: the statement's
//   changes go into one _tabgres.statement_changes row (arrays of record
//   text) under a run of sequence numbers reserved at once. A row per change,
//   with a nextval and a primary-key insert each, made a bulk INSERT ... SELECT
//   2.5 to 5 times slower than without capture. The transaction is
//   registered only on its first captured statement (a transaction-local
//   setting remembers it).
// - Everything else still sees one change per sequence number, as PostgreSQL's
//   WAL has one record per row: _tabgres.changes_after expands the runs, and
//   the _tabgres.changes view shows the whole log that way.
// - `_tabgres.xacts` gets one row per capturing transaction; a deferred
//   constraint trigger on it runs at COMMIT and stamps the last sequence
//   number and commit time, then NOTIFYs. NOTIFY is delivered only after the
//   commit, so it is the readers' wake-up signal; a rolled-back transaction
//   leaves neither rows nor a signal.
// - Relation shapes and publication contents are versioned by change
//   position so a lagging reader decodes old rows with the shape and
//   publication membership they were written under.

export const ENGINE_SCHEMA = '_tabgres'
/** Schema placed before pg_catalog in search_path for the SQL-visible shims. */
export const SHIM_SCHEMA = '_tabgres_sql'
export const COMMIT_CHANNEL = '_tabgres_commit'

/**
 * True while the session's output settings are the ones captured text is
 * written under (PostgreSQL's defaults, as in the goldens). current_setting
 * shows each in canonical spelling (SET timezone = 'utc' shows UTC); another
 * spelling of the same setting only takes the pinning path, which is correct too.
 */
const CANONICAL_OUTPUT = `current_setting('DateStyle') = 'ISO, MDY' AND current_setting('TimeZone') = 'UTC'
  AND current_setting('IntervalStyle') = 'postgres' AND current_setting('extra_float_digits') = '1'
  AND current_setting('bytea_output') = 'hex'`

export const INSTALL_SQL = /* sql */ `
CREATE SCHEMA IF NOT EXISTS _tabgres;
CREATE SCHEMA IF NOT EXISTS _tabgres_sql;

CREATE SEQUENCE IF NOT EXISTS _tabgres.change_seq;

-- Table names (LIKE patterns) never captured: installChangeTracking's
-- excludeTables, set each time the database opens (orez excludes its _zero_ tables).
CREATE TABLE IF NOT EXISTS _tabgres.excluded_tables (pattern text PRIMARY KEY);

-- One row per capturing statement (a TRUNCATE or a message is a statement of
-- one change): its n changes have the sequence numbers first_seq ..
-- first_seq + n - 1, in the order of the arrays' elements. Each array is NULL
-- or has n elements; toast_unchanged is NULL for a table without varlena columns.
CREATE TABLE IF NOT EXISTS _tabgres.statement_changes (
  first_seq bigint PRIMARY KEY,
  n int NOT NULL,
  xid bigint NOT NULL,
  relid oid NOT NULL,
  op "char" NOT NULL,      -- I U D T, M transactional message, m non-transactional
  new_rows text[],         -- record text; message content as hex
  old_rows text[],         -- record text; message prefix
  toast_unchanged text[]   -- UPDATE: "3,5", the 1-based fields whose out-of-line TOAST value was kept (NULL: none)
);

-- A run's arrays go out of line uncompressed (STORAGE EXTERNAL). Compressing
-- them (pglz, the default) made a 10,000-row INSERT ... SELECT about a fifth
-- slower than the rest of its capture, to save space the pruner gives back
-- anyway; reading them needs no decompression either. Only values over the
-- TOAST threshold (about 2 kB, a statement of dozens of rows) are affected.
DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '_tabgres.statement_changes'::regclass
              AND attname IN ('new_rows', 'old_rows', 'toast_unchanged') AND attstorage <> 'e') THEN
    ALTER TABLE _tabgres.statement_changes ALTER COLUMN new_rows SET STORAGE EXTERNAL,
      ALTER COLUMN old_rows SET STORAGE EXTERNAL, ALTER COLUMN toast_unchanged SET STORAGE EXTERNAL;
  END IF;
END $$;

-- Up to lim changes after sequence number "after" (all when lim is NULL), one
-- row per change, in sequence order:
-- - runs never overlap, so the only run that can start at or below "after" and
--   end above it is the newest one starting at or below it: one backward index
--   probe finds it, and lim runs from there hold at least lim changes;
-- - a one-change run (a single-row statement, the common case) is read as it
--   is; a set-returning function per run costs several times that;
-- - a longer run expands only the slice it needs (the reader takes a
--   10,000-row statement a batch at a time), by set-returning functions in the
--   select list: they run in lockstep (a shorter one yields NULLs; the series
--   gives TRUNCATE its row) and emit each input row's results in order, before
--   the next row's, so the first lim rows, taken without a sort, are the first
--   lim changes of these runs. (Sorting every expanded row of lim runs first
--   would cost up to lim * lim rows.)
CREATE OR REPLACE FUNCTION _tabgres.changes_after(after bigint, lim int)
RETURNS TABLE (seq bigint, xid bigint, relid oid, op "char", new_row text, old_row text, toast_unchanged text)
LANGUAGE sql STABLE AS $$
  WITH s AS (
    SELECT * FROM _tabgres.statement_changes s
     WHERE s.first_seq >= COALESCE((SELECT max(p.first_seq) FROM _tabgres.statement_changes p
                                     WHERE p.first_seq <= after), 0)
       AND s.first_seq + s.n - 1 > after
     ORDER BY s.first_seq LIMIT lim)
  SELECT s.first_seq, s.xid, s.relid, s.op, s.new_rows[1], s.old_rows[1], s.toast_unchanged[1] FROM s WHERE s.n = 1
  UNION ALL
  (SELECT e.first_seq + e.i - 1, e.xid, e.relid, e.op, e.new_row, e.old_row, e.toast
     FROM (SELECT s.first_seq, s.xid, s.relid, s.op, generate_series(r.lo, r.hi) AS i,
                  unnest(s.new_rows[r.lo:r.hi]) AS new_row, unnest(s.old_rows[r.lo:r.hi]) AS old_row,
                  unnest(s.toast_unchanged[r.lo:r.hi]) AS toast
             FROM s
            -- The run's elements lo..hi (1-based) are wanted; least() ignores a NULL lim.
            CROSS JOIN LATERAL (SELECT greatest(after + 2 - s.first_seq, 1) AS lo) l
            CROSS JOIN LATERAL (SELECT l.lo, least(s.n, l.lo + lim - 1) AS hi) r
            WHERE s.n > 1) e
    LIMIT lim)
  ORDER BY 1 LIMIT lim
$$;

CREATE TABLE IF NOT EXISTS _tabgres.xacts (
  xid bigint PRIMARY KEY,
  first_seq bigint NOT NULL,
  last_seq bigint,
  commit_time timestamptz
);

CREATE TABLE IF NOT EXISTS _tabgres.relation_versions (
  id bigserial PRIMARY KEY,
  relid oid NOT NULL,
  valid_after bigint NOT NULL,
  shape jsonb
);

CREATE TABLE IF NOT EXISTS _tabgres.publication_versions (
  id bigserial PRIMARY KEY,
  valid_after bigint NOT NULL,
  publications jsonb NOT NULL
);

-- The position of the last change so far (0 before any): non-transactional,
-- and PGlite is a single backend, so this is exact between statements.
-- (pg_sequence_last_value is NULL before the first nextval. No FROM clause:
-- the planner inlines the function.)
CREATE OR REPLACE FUNCTION _tabgres.position() RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE(pg_sequence_last_value('_tabgres.change_seq'::regclass), 0)
$$;

-- Takes the next n sequence numbers and returns the first: one nextval and
-- one setval instead of n nextvals. Like nextval it is non-transactional (a
-- rolled-back statement leaves a gap), and PGlite is a single backend, so
-- nothing can take a number in between. A single number needs no setval
-- (setval writes WAL each time; nextval every 32 numbers).
CREATE OR REPLACE FUNCTION _tabgres.reserve(n int) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  SELECT CASE WHEN n = 1 THEN nextval('_tabgres.change_seq')
              ELSE setval('_tabgres.change_seq', nextval('_tabgres.change_seq') + n - 1) - n + 1 END
$$;

-- Registers transaction x; its first change takes the next sequence number.
-- A transaction-local setting remembers the registration; it reverts with a
-- rolled-back savepoint, exactly like the xacts row it guards. Callers test
-- the setting themselves (a PL/pgSQL call per statement costs more than the test).
CREATE OR REPLACE FUNCTION _tabgres.register(x bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO _tabgres.xacts (xid, first_seq) VALUES (x, _tabgres.position() + 1)
    ON CONFLICT (xid) DO NOTHING;
  PERFORM set_config('tabgres.xact', x::text, true);
END $$;

-- Registers the current transaction once and returns its xid.
CREATE OR REPLACE FUNCTION _tabgres.xact() RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE x bigint := pg_current_xact_id()::text::bigint;
BEGIN
  IF current_setting('tabgres.xact', true) IS DISTINCT FROM x::text THEN PERFORM _tabgres.register(x); END IF;
  RETURN x;
END $$;

-- Pins the output settings for the rest of the calling statement and returns
-- what they were, for _tabgres.restore_output. Transaction-local
-- (set_config(..., true)): if the statement fails, the (sub)transaction's
-- rollback restores them instead.
CREATE OR REPLACE FUNCTION _tabgres.pin_output() RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE saved text[] := ARRAY[current_setting('DateStyle'), current_setting('TimeZone'),
  current_setting('IntervalStyle'), current_setting('extra_float_digits'), current_setting('bytea_output')];
BEGIN
  PERFORM set_config('DateStyle', 'ISO, MDY', true), set_config('TimeZone', 'UTC', true),
    set_config('IntervalStyle', 'postgres', true), set_config('extra_float_digits', '1', true),
    set_config('bytea_output', 'hex', true);
  RETURN saved;
END $$;

CREATE OR REPLACE FUNCTION _tabgres.restore_output(saved text[]) RETURNS void
LANGUAGE sql AS $$
  SELECT set_config('DateStyle', saved[1], true), set_config('TimeZone', saved[2], true),
    set_config('IntervalStyle', saved[3], true), set_config('extra_float_digits', saved[4], true),
    set_config('bytea_output', saved[5], true)
$$;

CREATE OR REPLACE FUNCTION _tabgres.on_commit() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE _tabgres.xacts SET last_seq = _tabgres.position(), commit_time = clock_timestamp()
   WHERE xid = NEW.xid;
  -- The payload is the commit's position (replication/notifier.ts keeps it).
  PERFORM pg_notify('${COMMIT_CHANNEL}', _tabgres.position()::text);
  RETURN NULL;
END $$;

DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '_tabgres_commit'
                  AND tgrelid = '_tabgres.xacts'::regclass) THEN
    CREATE CONSTRAINT TRIGGER _tabgres_commit AFTER INSERT ON _tabgres.xacts
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION _tabgres.on_commit();
  END IF;
END $$;

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
      IF NOT (${CANONICAL_OUTPUT}) THEN saved := _tabgres.pin_output(); END IF;$h$;
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

CREATE OR REPLACE FUNCTION _tabgres.capture_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE x bigint := _tabgres.xact();
BEGIN
  INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op)
    VALUES (nextval('_tabgres.change_seq'), 1, x, TG_RELID, 'T');
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

-- What pgoutput's Relation and Type messages describe, as of now.
CREATE OR REPLACE FUNCTION _tabgres.relation_shape(rel oid) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'namespace', n.nspname,
    'name', c.relname,
    'namespaceOid', n.oid::int8,
    'replicaIdentity', c.relreplident::text,
    'columns', COALESCE((
      SELECT jsonb_agg(jsonb_build_object(
               'name', a.attname,
               'typeOid', a.atttypid::int8,
               'typeMod', a.atttypmod,
               'generated', a.attgenerated <> '',
               'key', CASE c.relreplident
                        WHEN 'f' THEN true
                        WHEN 'n' THEN false
                        ELSE EXISTS (SELECT 1 FROM pg_index i
                                      WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)
                                        AND ((c.relreplident = 'd' AND i.indisprimary)
                                          OR (c.relreplident = 'i' AND i.indisreplident)))
                      END,
               -- pgoutput names a type by its base type (logicalrep_write_typ).
               'typeNamespace', CASE WHEN bn.nspname = 'pg_catalog' THEN '' ELSE bn.nspname END,
               'typeName', bt.typname)
             ORDER BY a.attnum)
        FROM pg_attribute a
        JOIN pg_type bt ON bt.oid = CASE WHEN (SELECT typtype FROM pg_type WHERE oid = a.atttypid) = 'd'
                                         THEN (SELECT typbasetype FROM pg_type WHERE oid = a.atttypid)
                                         ELSE a.atttypid END
        JOIN pg_namespace bn ON bn.oid = bt.typnamespace
       WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated <> 'v'), '[]'::jsonb))
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE c.oid = rel
$$;

CREATE OR REPLACE FUNCTION _tabgres.publications_now() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT COALESCE(jsonb_agg(jsonb_build_object(
    'name', p.pubname,
    'allTables', p.puballtables,
    'insert', p.pubinsert, 'update', p.pubupdate, 'delete', p.pubdelete, 'truncate', p.pubtruncate,
    'relids', COALESCE((SELECT jsonb_agg(pr.prrelid::int8) FROM pg_publication_rel pr WHERE pr.prpubid = p.oid), '[]'),
    'schemas', COALESCE((SELECT jsonb_agg(pn.pnnspid::int8) FROM pg_publication_namespace pn WHERE pn.pnpubid = p.oid), '[]')
  )), '[]'::jsonb) FROM pg_publication p
$$;

CREATE OR REPLACE FUNCTION _tabgres.is_user_table(rel oid) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.oid = rel AND c.relkind IN ('r', 'p') AND c.relpersistence = 'p'
      AND n.nspname NOT IN ('pg_catalog', 'information_schema', '_tabgres', '_tabgres_sql')
      AND n.nspname NOT LIKE 'pg\\_%'
      AND NOT EXISTS (SELECT 1 FROM _tabgres.excluded_tables e WHERE c.relname LIKE e.pattern))
$$;

-- Installs the capture triggers on one table (idempotent) and records its shape.
CREATE OR REPLACE FUNCTION _tabgres.track(rel oid) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE t text := rel::regclass::text;
BEGIN
  IF NOT _tabgres.is_user_table(rel) THEN RETURN; END IF;
  PERFORM set_config('tabgres.installing', 'on', true);
  -- Regenerated on every DDL of the table: its columns may have changed.
  PERFORM _tabgres.define_capture(rel);
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = '_tabgres_1_insert') THEN
    EXECUTE format('CREATE TRIGGER _tabgres_1_insert AFTER INSERT ON %s REFERENCING NEW TABLE AS _tabgres_new FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.capture_insert_%s()', t, rel);
    EXECUTE format('CREATE TRIGGER _tabgres_2_update AFTER UPDATE ON %s REFERENCING OLD TABLE AS _tabgres_old NEW TABLE AS _tabgres_new FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.capture_update_%s()', t, rel);
    EXECUTE format('CREATE TRIGGER _tabgres_3_delete AFTER DELETE ON %s REFERENCING OLD TABLE AS _tabgres_old FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.capture_delete_%s()', t, rel);
    EXECUTE format('CREATE TRIGGER _tabgres_4_truncate AFTER TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.capture_truncate()', t);
    -- Logical decoding sees every change, also under session_replication_role = replica.
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER _tabgres_1_insert, ENABLE ALWAYS TRIGGER _tabgres_2_update, ENABLE ALWAYS TRIGGER _tabgres_3_delete, ENABLE ALWAYS TRIGGER _tabgres_4_truncate', t);
  END IF;
  -- The replica identity check runs only where an UPDATE or DELETE could
  -- fail it: not under REPLICA IDENTITY FULL, nor DEFAULT with a primary key
  -- (most tables), where it cost as much as the rest of the capture of a
  -- one-row UPDATE. Leaving those states takes an ALTER TABLE of this table
  -- (primary key, REPLICA IDENTITY), which runs this again.
  IF EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = rel AND (c.relreplident = 'f'
               OR (c.relreplident = 'd' AND EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = rel AND i.indisprimary)))) THEN
    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = '_tabgres_0_check') THEN
      EXECUTE format('DROP TRIGGER _tabgres_0_check ON %s', t);
    END IF;
  ELSIF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = '_tabgres_0_check') THEN
    EXECUTE format('CREATE TRIGGER _tabgres_0_check BEFORE UPDATE OR DELETE ON %s FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.check_identity()', t);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER _tabgres_0_check', t);
  END IF;
  INSERT INTO _tabgres.relation_versions (relid, valid_after, shape)
    VALUES (rel, _tabgres.position(), _tabgres.relation_shape(rel));
  PERFORM set_config('tabgres.installing', 'off', true);
END $$;

CREATE OR REPLACE FUNCTION _tabgres.record_publications() RETURNS void
LANGUAGE sql AS $$
  INSERT INTO _tabgres.publication_versions (valid_after, publications)
    VALUES (_tabgres.position(), _tabgres.publications_now())
$$;

CREATE OR REPLACE FUNCTION _tabgres.on_ddl() RETURNS event_trigger
LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
  IF current_setting('tabgres.installing', true) = 'on' THEN RETURN; END IF;
  IF tg_tag LIKE '%PUBLICATION%' THEN
    PERFORM _tabgres.record_publications();
    RETURN;
  END IF;
  -- COMMENT and SECURITY LABEL do not invalidate pgoutput's relation cache.
  IF tg_tag IN ('COMMENT', 'SECURITY LABEL') THEN RETURN; END IF;
  FOR r IN SELECT DISTINCT CASE WHEN c.relkind IN ('i', 'I') THEN i.indrelid ELSE c.oid END AS rel
             FROM pg_event_trigger_ddl_commands() d
             JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
             LEFT JOIN pg_index i ON i.indexrelid = c.oid
  LOOP
    PERFORM _tabgres.track(r.rel);
  END LOOP;
END $$;

DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_event_trigger WHERE evtname = '_tabgres_ddl') THEN
    CREATE EVENT TRIGGER _tabgres_ddl ON ddl_command_end EXECUTE FUNCTION _tabgres.on_ddl();
  END IF;
END $$;

-- Logical decoding messages. PGlite writes their WAL record but nothing decodes
-- it, so these shims (found before pg_catalog on the search_path) capture them.
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content bytea, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE plpgsql AS $$
DECLARE x bigint := _tabgres.xact();
BEGIN
  INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows)
    VALUES (nextval('_tabgres.change_seq'), 1, x, 0, CASE WHEN transactional THEN 'M' ELSE 'm' END,
            ARRAY[encode(content, 'hex')], ARRAY[prefix]);
  RETURN _tabgres_sql.pg_current_wal_lsn();
END $$;

CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content text, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE sql AS $$
  SELECT _tabgres_sql.pg_logical_emit_message(transactional, prefix, convert_to(content, 'UTF8'), flush)
$$;

-- WAL positions as the replication stream numbers them (see lsn mapping in the reader).
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT '0/1000000'::pg_lsn + (_tabgres.position() * 64 + 48) $$;
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_insert_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres_sql.pg_current_wal_lsn() $$;
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_flush_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres_sql.pg_current_wal_lsn() $$;

-- tabgres provides logical decoding, so it reports wal_level = logical.
CREATE OR REPLACE FUNCTION _tabgres_sql.current_setting(setting_name text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN lower(setting_name) = 'wal_level' THEN 'logical' ELSE pg_catalog.current_setting(setting_name) END
$$;
CREATE OR REPLACE FUNCTION _tabgres_sql.current_setting(setting_name text, missing_ok boolean) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN lower(setting_name) = 'wal_level' THEN 'logical' ELSE pg_catalog.current_setting(setting_name, missing_ok) END
$$;

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
              E'\\n' ORDER BY b.seq) FROM b),
    (SELECT string_agg(x.xid || ' ' || x.last_seq || ' '
              || (extract(epoch FROM x.commit_time - timestamptz '2000-01-01 00:00:00+00') * 1000000)::bigint, ' ')
       FROM (SELECT DISTINCT b.xid FROM b) d
       CROSS JOIN LATERAL (SELECT * FROM _tabgres.xacts x WHERE x.xid = d.xid) x);
END $$;

-- Compatibility with the orez change records: a row's values as typed JSON.
CREATE OR REPLACE FUNCTION _tabgres.row_json(rel oid, row_text text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE j jsonb;
BEGIN
  IF row_text IS NULL THEN RETURN NULL; END IF;
  EXECUTE format('SELECT to_jsonb($1::%s)', (SELECT reltype::regtype::text FROM pg_class WHERE oid = rel))
    INTO j USING row_text;
  RETURN j;
END $$;
`

/** Track every existing user table and snapshot publications (idempotent). */
export const TRACK_ALL_SQL = /* sql */ `
SELECT _tabgres.track(c.oid) FROM pg_class c
 WHERE _tabgres.is_user_table(c.oid)
   AND NOT EXISTS (SELECT 1 FROM _tabgres.relation_versions v WHERE v.relid = c.oid);
SELECT _tabgres.record_publications()
 WHERE NOT EXISTS (SELECT 1 FROM _tabgres.publication_versions);
`

/** The engine's search_path: the shims before pg_catalog. */
export const SEARCH_PATH = `"$user", public, ${SHIM_SCHEMA}, pg_catalog`

/** Put the shims before pg_catalog, for this session and for later ones. */
export function searchPathSql(database: string): string {
  return `SET search_path = ${SEARCH_PATH}; ALTER DATABASE "${database.replace(/"/g, '""')}" SET search_path = ${SEARCH_PATH};`
}
