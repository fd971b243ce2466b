-- Advisory locks per session, although every session shares one backend.
--
-- PGlite's own advisory locks belong to its single backend, so every session
-- would be granted every lock (the same owner, re-entrant). tabgres replaces
-- the pg_catalog functions (both key forms: one bigint, two int4) with ones
-- that keep PostgreSQL's per-session meaning:
-- - Session-level locks are held by the engine (backend/advisory.ts), which
--   lists them, and the session holding the backend now, in PGlite's MEMFS
--   (ADVISORY_FILE); the functions read that list, decide as PostgreSQL's
--   lock manager would (exclusive conflicts with any other session's lock,
--   shared with another's exclusive; re-entrant for the same session), and
--   ask the engine to record the change with a control notice. As in
--   PostgreSQL, ROLLBACK does not release them; the session's end does.
-- - Transaction-level locks need no record: a transaction holds the backend
--   until it ends, so no other session runs meanwhile. They only have to
--   respect other sessions' session-level locks.
-- - A lock another session holds makes the try_ forms return false; the
--   waiting forms fail with 55P03 and the message below, which the session
--   turns into a wait (bounded like every wait: lock_timeout,
--   statement_timeout, cancel) and a retry for a simple Query outside a
--   transaction block. Inside a block (or an extended-query sequence, whose
--   earlier replies the client already has) the backend cannot be given up
--   to the holder, so 55P03 is the answer there.
-- - From the worker API (db.query), which no wire session runs, the lock
--   functions check other sessions' locks but record none.

-- {"holder": <pid of the session running SQL, or null>, "locks": [{"key", "pid", "mode", "count"}]}
CREATE OR REPLACE FUNCTION _tabgres.advisory_state() RETURNS json
LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE(pg_catalog.pg_read_file('/tmp/tabgres/advisory.json', true), '{"holder": null, "locks": []}')::json
$$;

-- The process holding a conflicting lock, or null when the lock can be granted.
CREATE OR REPLACE FUNCTION _tabgres.advisory_conflict(key text, mode text) RETURNS int
LANGUAGE sql VOLATILE AS $$
  WITH s AS (SELECT _tabgres.advisory_state() AS j)
  SELECT (l->>'pid')::int FROM s, json_array_elements(s.j->'locks') l
   WHERE l->>'key' = key
     AND (l->>'pid')::int IS DISTINCT FROM (s.j->>'holder')::int
     AND (mode = 'exclusive' OR l->>'mode' = 'exclusive')
   LIMIT 1
$$;

CREATE OR REPLACE FUNCTION _tabgres.advisory_acquire(key text, mode text, level text, try boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE holder int := _tabgres.advisory_conflict(key, mode);
BEGIN
  IF key IS NULL THEN RETURN NULL; END IF;
  IF holder IS NOT NULL THEN
    IF try THEN RETURN false; END IF;
    RAISE EXCEPTION 'advisory lock held by another session' USING ERRCODE = '55P03',
      DETAIL = format('Process %s holds it. tabgres waits for it only for a simple-protocol statement outside a transaction block: otherwise this session holds the shared backend, which the holder needs to release it.', holder);
  END IF;
  IF level = 'session' THEN
    PERFORM _tabgres.control(json_build_object('op', 'advisory_lock', 'key', key, 'mode', mode));
  END IF;
  RETURN true;
END $$;

CREATE OR REPLACE FUNCTION _tabgres.advisory_wait(key text, mode text, level text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM _tabgres.advisory_acquire(key, mode, level, false);
END $$;

CREATE OR REPLACE FUNCTION _tabgres.advisory_release(key text, mode text) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
DECLARE s json := _tabgres.advisory_state();
BEGIN
  IF key IS NULL THEN RETURN NULL; END IF;
  IF NOT EXISTS (SELECT 1 FROM json_array_elements(s->'locks') l
                  WHERE l->>'key' = key AND l->>'mode' = mode AND (l->>'pid')::int IS NOT DISTINCT FROM (s->>'holder')::int) THEN
    RAISE WARNING 'you don''t own a lock of type %', CASE mode WHEN 'shared' THEN 'ShareLock' ELSE 'ExclusiveLock' END;
    RETURN false;
  END IF;
  PERFORM _tabgres.control(json_build_object('op', 'advisory_unlock', 'key', key, 'mode', mode));
  RETURN true;
END $$;

CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_unlock_all() RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.control(json_build_object('op', 'advisory_unlock_all')) $f$;

-- The lock functions, both key forms ('b<n>' for one bigint, 'i<a>:<b>' for
-- two int4: separate key spaces, as pg_locks' objsubid 1 and 2). They must be
-- inlinable SQL functions (not STRICT, one SELECT): the executor calls a
-- built-in function's C code by its OID without reading pg_proc, so only the
-- planner's inlining reaches these bodies. The helpers answer NULL for a NULL
-- key, as the strict built-ins do.
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_lock(bigint) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('b' || $1, 'exclusive', 'session') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_lock(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('b' || $1, 'exclusive', 'session', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_lock_shared(bigint) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('b' || $1, 'shared', 'session') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_lock_shared(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('b' || $1, 'shared', 'session', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_xact_lock(bigint) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('b' || $1, 'exclusive', 'xact') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_xact_lock(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('b' || $1, 'exclusive', 'xact', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_xact_lock_shared(bigint) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('b' || $1, 'shared', 'xact') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_xact_lock_shared(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('b' || $1, 'shared', 'xact', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_unlock(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_release('b' || $1, 'exclusive') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_unlock_shared(bigint) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_release('b' || $1, 'shared') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_lock(integer, integer) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('i' || $1 || ':' || $2, 'exclusive', 'session') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_lock(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('i' || $1 || ':' || $2, 'exclusive', 'session', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_lock_shared(integer, integer) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('i' || $1 || ':' || $2, 'shared', 'session') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_lock_shared(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('i' || $1 || ':' || $2, 'shared', 'session', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_xact_lock(integer, integer) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('i' || $1 || ':' || $2, 'exclusive', 'xact') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_xact_lock(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('i' || $1 || ':' || $2, 'exclusive', 'xact', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_xact_lock_shared(integer, integer) RETURNS void
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_wait('i' || $1 || ':' || $2, 'shared', 'xact') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_try_advisory_xact_lock_shared(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_acquire('i' || $1 || ':' || $2, 'shared', 'xact', true) $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_unlock(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_release('i' || $1 || ':' || $2, 'exclusive') $f$;
CREATE OR REPLACE FUNCTION pg_catalog.pg_advisory_unlock_shared(integer, integer) RETURNS boolean
LANGUAGE sql VOLATILE AS $f$ SELECT _tabgres.advisory_release('i' || $1 || ':' || $2, 'shared') $f$;
