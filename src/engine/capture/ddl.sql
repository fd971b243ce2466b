-- Following DDL: relation shapes and publication contents as of each change
-- position, which tables are captured, and the event trigger that keeps the
-- capture triggers in step with every table's columns.

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
               'typeName', bt.typname,
               -- For binary output (protocol/type-send.ts): the send function,
               -- and an array's element type and its send function.
               'send', bt.typsend::regproc::text,
               'elemOid', CASE WHEN bt.typsend = 'array_send'::regproc THEN bt.typelem::int8 END,
               'elemSend', CASE WHEN bt.typsend = 'array_send'::regproc
                                THEN (SELECT e.typsend::regproc::text FROM pg_type e WHERE e.oid = bt.typelem) END)
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
      AND n.nspname NOT LIKE 'pg\_%'
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
  -- Groups a TRUNCATE statement's tables (capture.sql, before_truncate);
  -- separate from the above so tables tracked by earlier versions get it too.
  IF NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = rel AND tgname = '_tabgres_0_truncate') THEN
    EXECUTE format('CREATE TRIGGER _tabgres_0_truncate BEFORE TRUNCATE ON %s FOR EACH STATEMENT EXECUTE FUNCTION _tabgres.before_truncate()', t);
    EXECUTE format('ALTER TABLE %s ENABLE ALWAYS TRIGGER _tabgres_0_truncate', t);
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
