-- SQL-visible shims, in schema _tabgres_sql, which installChangeTracking puts
-- before pg_catalog on the search_path.

-- Logical decoding messages. PGlite writes their WAL record but nothing decodes
-- it, so these shims (found before pg_catalog on the search_path) capture them.
-- A transactional message is a change-log row like any change. A
-- non-transactional one must go out even if its transaction rolls back, so
-- it is written where a rollback cannot reach (replication/message-files.ts):
-- COPY ... TO a file named by its sequence number (nextval is not undone
-- either), holding "xid prefix content" (xid 0 when the transaction has none
-- yet; prefix and content as hex, which COPY never escapes). A control
-- notice then wakes the readers, which a rollback would not.
CREATE OR REPLACE FUNCTION _tabgres.emit_nontransactional(prefix text, content bytea) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $$
DECLARE seq bigint := nextval('_tabgres.change_seq');
BEGIN
  EXECUTE format('COPY (SELECT %L) TO %L',
    COALESCE(pg_current_xact_id_if_assigned()::text, '0') || ' ' || encode(convert_to(prefix, 'UTF8'), 'hex')
      || ' ' || encode(content, 'hex'),
    current_setting('data_directory') || '/pg_tabgres/messages/' || lpad(seq::text, 20, '0'));
  PERFORM _tabgres.control(json_build_object('op', 'wake'));
END $$;

CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content bytea, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE plpgsql AS $$
BEGIN
  IF transactional THEN
    INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows)
      VALUES (nextval('_tabgres.change_seq'), 1, _tabgres.xact(), 0, 'M', ARRAY[encode(content, 'hex')], ARRAY[prefix]);
  ELSE
    PERFORM _tabgres.emit_nontransactional(prefix, content);
  END IF;
  RETURN _tabgres_sql.pg_current_wal_lsn();
END $$;

CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content text, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE sql AS $$
  SELECT _tabgres_sql.pg_logical_emit_message(transactional, prefix, convert_to(content, 'UTF8'), flush)
$$;

-- WAL positions as the replication stream numbers them (_tabgres.position_lsn
-- is made from engine/replication/positions.ts, the one formula).
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres.position_lsn(_tabgres.position()) $$;
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
