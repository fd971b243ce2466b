-- tabgres's change capture inside PGlite: the change log.
--
-- Why this shape:
-- - Statement-level AFTER triggers with transition tables capture a whole
--   statement with one INSERT ... SELECT (a row trigger would pay a PL/pgSQL
--   call per row). Each row is stored as record text, ROW(r.col, ...)::text:
--   every field is the type's text output function, exactly what pgoutput
--   sends. (Never `r::text`: a column named `r` would be captured instead.)
-- - Stored text must be canonical whatever the writer session set. Capture
--   functions test the output settings and, only when a session changed
--   them, pin them around their INSERT (set_config). SET clauses on the
--   functions would do the same but cost more per statement than the capture
--   INSERT itself; so would a trigger WHEN (planned anew for every statement).
-- - One INSERT of one row per statement does all the work: the statement's
--   changes go into one _tabgres.statement_changes row (arrays of record
--   text) under a run of sequence numbers reserved at once. A row per change,
--   with a nextval and a primary-key insert each, made a bulk INSERT ... SELECT
--   2.5 to 5 times slower than without capture. The transaction is
--   registered only on its first captured statement (a transaction-local
--   setting remembers it).
-- - Everything else still sees one change per sequence number, as PostgreSQL's
--   WAL has one record per row: _tabgres.changes_after expands the runs, and
--   the _tabgres.changes view shows the whole log that way.
-- - `_tabgres.xacts` gets one row per capturing transaction; a deferred
--   constraint trigger on it runs at COMMIT and stamps the last sequence
--   number and commit time, then NOTIFYs. NOTIFY is delivered only after the
--   commit, so it is the readers' wake-up signal; a rolled-back transaction
--   leaves neither rows nor a signal.
-- - Relation shapes and publication contents are versioned by change
--   position so a lagging reader decodes old rows with the shape and
--   publication membership they were written under.
--
-- This file: the change log (statement runs, transactions, versioned shapes and
-- publications), positions, and the commit trigger that signals readers.

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
  PERFORM pg_notify('_tabgres_commit', _tabgres.position()::text);
  RETURN NULL;
END $$;

DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = '_tabgres_commit'
                  AND tgrelid = '_tabgres.xacts'::regclass) THEN
    CREATE CONSTRAINT TRIGGER _tabgres_commit AFTER INSERT ON _tabgres.xacts
      DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION _tabgres.on_commit();
  END IF;
END $$;
