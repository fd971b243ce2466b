// The catalog queries behind a dump (./dump.ts), one per kind of object, in
// the user's schemas only: never tabgres's own (_tabgres, _tabgres_sql), the
// system's, or what an extension owns (CREATE EXTENSION brings that back).
// Definitions come from PostgreSQL's own pg_get_*def and format_type, which
// qualify every name when search_path is empty (as pg_dump runs them), so the
// dump loads under any search_path.

/** A namespace the dump covers (`n` is pg_namespace); also what a dump is loaded beside (./restore.ts). */
export const USER_NS = `n.nspname NOT IN ('pg_catalog', 'information_schema', '_tabgres', '_tabgres_sql')
  AND n.nspname NOT LIKE 'pg\\_%'`

/** The object `oid` of catalog `cls` is not an extension's member. */
const notExtension = (cls: string, oid: string) =>
  `NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = '${cls}'::regclass AND d.objid = ${oid} AND d.deptype = 'e')`

export const SCHEMAS = `SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_namespace n
  WHERE ${USER_NS} AND n.nspname <> 'public' AND ${notExtension('pg_namespace', 'n.oid')} ORDER BY n.oid`

export const EXTENSIONS = `SELECT pg_catalog.quote_ident(e.extname), pg_catalog.quote_ident(n.nspname)
  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
  WHERE e.extname <> 'plpgsql' ORDER BY e.oid`

/** Enums, domains and composite types: kind, qualified name, and what defines it. */
export const TYPES = `SELECT t.typtype, pg_catalog.format_type(t.oid, NULL),
    CASE t.typtype
      WHEN 'e' THEN (SELECT pg_catalog.string_agg(pg_catalog.quote_literal(e.enumlabel), ', ' ORDER BY e.enumsortorder)
                       FROM pg_catalog.pg_enum e WHERE e.enumtypid = t.oid)
      WHEN 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod)
        || CASE WHEN t.typcollation <> 0 AND t.typcollation <> (SELECT b.typcollation FROM pg_catalog.pg_type b WHERE b.oid = t.typbasetype)
                THEN ' COLLATE ' || (SELECT pg_catalog.quote_ident(c.collname) FROM pg_catalog.pg_collation c WHERE c.oid = t.typcollation) ELSE '' END
        || CASE WHEN t.typdefault IS NOT NULL THEN ' DEFAULT ' || t.typdefault ELSE '' END
        || CASE WHEN t.typnotnull THEN ' NOT NULL' ELSE '' END
        || COALESCE((SELECT pg_catalog.string_agg(' CONSTRAINT ' || pg_catalog.quote_ident(c.conname) || ' ' || pg_catalog.pg_get_constraintdef(c.oid), '' ORDER BY c.conname)
                       FROM pg_catalog.pg_constraint c WHERE c.contypid = t.oid AND c.contype = 'c'), '')
      WHEN 'c' THEN (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname) || ' ' || pg_catalog.format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum)
                       FROM pg_catalog.pg_attribute a WHERE a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped)
    END
  FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
  WHERE ${USER_NS} AND ${notExtension('pg_type', 't.oid')}
    AND (t.typtype IN ('e', 'd') OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c'))
  ORDER BY t.oid`

/** Functions and procedures, whole. */
export const FUNCTIONS = `SELECT pg_catalog.pg_get_functiondef(p.oid)
  FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  WHERE ${USER_NS} AND p.prokind IN ('f', 'p') AND ${notExtension('pg_proc', 'p.oid')} ORDER BY p.oid`

/** Sequences that are not an identity column's: name, type, start, increment, min, max, cache, cycle, owner column. */
export const SEQUENCES = `SELECT c.oid::pg_catalog.text, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname),
    pg_catalog.format_type(s.seqtypid, NULL), s.seqstart::pg_catalog.text, s.seqincrement::pg_catalog.text,
    s.seqmin::pg_catalog.text, s.seqmax::pg_catalog.text, s.seqcache::pg_catalog.text, s.seqcycle::pg_catalog.text,
    (SELECT pg_catalog.quote_ident(tn.nspname) || '.' || pg_catalog.quote_ident(t.relname) || '.' || pg_catalog.quote_ident(a.attname)
       FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_class t ON t.oid = d.refobjid
       JOIN pg_catalog.pg_namespace tn ON tn.oid = t.relnamespace
       JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
      WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'a' LIMIT 1)
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_sequence s ON s.seqrelid = c.oid
  WHERE ${USER_NS} AND c.relkind = 'S' AND ${notExtension('pg_class', 'c.oid')}
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'i')
  ORDER BY c.oid`

/** Where every sequence stands (identity ones included): qualified name, last_value, is_called. */
export const SEQUENCE_VALUES = `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), q.last_value::pg_catalog.text, q.is_called::pg_catalog.text
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace,
  LATERAL pg_catalog.pg_sequence_last_value(c.oid) v(value),
  LATERAL (SELECT COALESCE(v.value, s.seqstart) AS last_value, v.value IS NOT NULL AS is_called FROM pg_catalog.pg_sequence s WHERE s.seqrelid = c.oid) q
  WHERE ${USER_NS} AND c.relkind = 'S' AND ${notExtension('pg_class', 'c.oid')} ORDER BY c.oid`

/**
 * Tables (plain, partitioned, partitions): oid, qualified name, relkind,
 * partition key, parent and bound (a partition), replica identity, comment.
 * Partitions come after every other table (their parents first).
 */
export const TABLES = `SELECT c.oid::pg_catalog.text, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), c.relkind::pg_catalog.text,
    CASE WHEN c.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(c.oid) END,
    CASE WHEN c.relispartition THEN (SELECT pg_catalog.quote_ident(pn.nspname) || '.' || pg_catalog.quote_ident(p.relname)
       FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class p ON p.oid = i.inhparent JOIN pg_catalog.pg_namespace pn ON pn.oid = p.relnamespace
      WHERE i.inhrelid = c.oid) END,
    CASE WHEN c.relispartition THEN pg_catalog.pg_get_expr(c.relpartbound, c.oid) END,
    c.relreplident::pg_catalog.text,
    pg_catalog.obj_description(c.oid, 'pg_class')
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE ${USER_NS} AND c.relkind IN ('r', 'p') AND ${notExtension('pg_class', 'c.oid')}
  ORDER BY c.relispartition, c.oid`

/**
 * Columns of table $1: name, type, collation (when not the type's),
 * default, NOT NULL, identity ('a', 'd' or ''), identity sequence options,
 * generated ('s' stored, 'v' virtual or ''), comment. A partition's columns
 * are its parent's (PARTITION OF); an inheriting table's are all listed.
 */
export const COLUMNS = (relid: string) => `SELECT pg_catalog.quote_ident(a.attname), pg_catalog.format_type(a.atttypid, a.atttypmod),
    CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation
         THEN (SELECT pg_catalog.quote_ident(cn.nspname) || '.' || pg_catalog.quote_ident(co.collname)
                 FROM pg_catalog.pg_collation co JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace WHERE co.oid = a.attcollation) END,
    pg_catalog.pg_get_expr(d.adbin, d.adrelid),
    a.attnotnull::pg_catalog.text, a.attidentity::pg_catalog.text,
    (SELECT 'SEQUENCE NAME ' || pg_catalog.quote_ident(sn.nspname) || '.' || pg_catalog.quote_ident(sc.relname)
            || ' START WITH ' || s.seqstart || ' INCREMENT BY ' || s.seqincrement || ' MINVALUE ' || s.seqmin
            || ' MAXVALUE ' || s.seqmax || ' CACHE ' || s.seqcache || CASE WHEN s.seqcycle THEN ' CYCLE' ELSE '' END
       FROM pg_catalog.pg_depend dp JOIN pg_catalog.pg_class sc ON sc.oid = dp.objid
       JOIN pg_catalog.pg_namespace sn ON sn.oid = sc.relnamespace JOIN pg_catalog.pg_sequence s ON s.seqrelid = sc.oid
      WHERE a.attidentity <> '' AND dp.classid = 'pg_class'::regclass AND dp.refobjid = a.attrelid
        AND dp.refobjsubid = a.attnum AND dp.deptype = 'i' AND sc.relkind = 'S'),
    a.attgenerated::pg_catalog.text,
    pg_catalog.col_description(a.attrelid, a.attnum)
  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
  WHERE a.attrelid = ${relid} AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`

/**
 * Table constraints (NOT NULL is the column's): table, name, definition,
 * whether a foreign key (those go last, after every table's data and keys).
 * A partition's constraints that come from its parent are the parent's.
 */
export const CONSTRAINTS = `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(t.relname), pg_catalog.quote_ident(c.conname),
    pg_catalog.pg_get_constraintdef(c.oid), (c.contype = 'f')::pg_catalog.text, (t.relkind = 'p')::pg_catalog.text
  FROM pg_catalog.pg_constraint c JOIN pg_catalog.pg_class t ON t.oid = c.conrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
  WHERE ${USER_NS} AND c.contype IN ('p', 'u', 'c', 'x', 'f') AND c.conparentid = 0 AND c.conislocal
    AND ${notExtension('pg_class', 't.oid')}
  ORDER BY (c.contype = 'f'), t.oid, c.contype DESC, c.conname`

/** Indexes that back no constraint and do not come from a partitioned parent's index. */
export const INDEXES = `SELECT pg_catalog.pg_get_indexdef(i.indexrelid)
  FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_class t ON t.oid = i.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
  WHERE ${USER_NS} AND t.relkind IN ('r', 'p', 'm') AND ${notExtension('pg_class', 't.oid')}
    AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.conindid = i.indexrelid AND k.contype IN ('p', 'u', 'x'))
    AND NOT c.relispartition
  ORDER BY c.oid`

/** Replica identity USING INDEX: table, index name. */
export const IDENTITY_INDEXES = `SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(t.relname), pg_catalog.quote_ident(c.relname)
  FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class c ON c.oid = i.indexrelid
  JOIN pg_catalog.pg_class t ON t.oid = i.indrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
  WHERE ${USER_NS} AND i.indisreplident ORDER BY t.oid`

/** Views and materialized views: kind, qualified name, query. */
export const VIEWS = `SELECT c.relkind::pg_catalog.text, pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname), pg_catalog.pg_get_viewdef(c.oid)
  FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE ${USER_NS} AND c.relkind IN ('v', 'm') AND ${notExtension('pg_class', 'c.oid')} ORDER BY c.oid`

/** The user's own triggers (never tabgres's capture triggers, nor those behind foreign keys). */
export const TRIGGERS = `SELECT pg_catalog.pg_get_triggerdef(g.oid)
  FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class t ON t.oid = g.tgrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
  WHERE ${USER_NS} AND NOT g.tgisinternal AND g.tgname NOT LIKE '\\_tabgres%' AND g.tgparentid = 0 ORDER BY g.oid`

/**
 * Publications: name, all tables, the actions published, via partition root,
 * the tables (each "qualified name (columns) WHERE (filter)") and schemas.
 */
export const PUBLICATIONS = `SELECT pg_catalog.quote_ident(p.pubname), p.puballtables::pg_catalog.text,
    pg_catalog.concat_ws(', ', CASE WHEN p.pubinsert THEN 'insert' END, CASE WHEN p.pubupdate THEN 'update' END,
      CASE WHEN p.pubdelete THEN 'delete' END, CASE WHEN p.pubtruncate THEN 'truncate' END),
    p.pubviaroot::pg_catalog.text,
    (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)
              || COALESCE(' (' || (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', ' ORDER BY a.attnum)
                                     FROM pg_catalog.pg_attribute a WHERE a.attrelid = r.prrelid AND a.attnum = ANY (r.prattrs)) || ')', '')
              || COALESCE(' WHERE (' || pg_catalog.pg_get_expr(r.prqual, r.prrelid) || ')', ''), ', ' ORDER BY c.oid)
       FROM pg_catalog.pg_publication_rel r JOIN pg_catalog.pg_class c ON c.oid = r.prrelid
       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE r.prpubid = p.oid),
    (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' ORDER BY n.oid)
       FROM pg_catalog.pg_publication_namespace s JOIN pg_catalog.pg_namespace n ON n.oid = s.pnnspid WHERE s.pnpubid = p.oid)
  FROM pg_catalog.pg_publication p ORDER BY p.oid`

/** What the dump does not carry, by kind, for its header (never dropped in silence). */
export const NOT_DUMPED = `SELECT 'row-level security policy ' || pg_catalog.quote_ident(pol.polname) || ' on ' || t.oid::pg_catalog.regclass::pg_catalog.text
    FROM pg_catalog.pg_policy pol JOIN pg_catalog.pg_class t ON t.oid = pol.polrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace WHERE ${USER_NS}
  UNION ALL
  SELECT 'rule ' || pg_catalog.quote_ident(r.rulename) || ' on ' || t.oid::pg_catalog.regclass::pg_catalog.text
    FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class t ON t.oid = r.ev_class JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
   WHERE ${USER_NS} AND r.rulename <> '_RETURN'
  UNION ALL
  SELECT 'row-level security of ' || t.oid::pg_catalog.regclass::pg_catalog.text || ' (enabled)'
    FROM pg_catalog.pg_class t JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace WHERE ${USER_NS} AND t.relrowsecurity
  UNION ALL
  SELECT 'inheritance of ' || i.inhrelid::pg_catalog.regclass::pg_catalog.text || ' from ' || i.inhparent::pg_catalog.regclass::pg_catalog.text
      || ' (dumped as a table of its own)'
    FROM pg_catalog.pg_inherits i JOIN pg_catalog.pg_class t ON t.oid = i.inhrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
   WHERE ${USER_NS} AND NOT t.relispartition
  UNION ALL
  SELECT 'virtual generated column ' || a.attrelid::pg_catalog.regclass::pg_catalog.text || '.' || pg_catalog.quote_ident(a.attname)
      || ' (dumped as STORED: PostgreSQL before 18 has no virtual generated columns)'
    FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class t ON t.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace
   WHERE ${USER_NS} AND a.attgenerated = 'v' AND NOT a.attisdropped
  UNION ALL
  SELECT 'range type ' || pg_catalog.format_type(t.oid, NULL)
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE ${USER_NS} AND t.typtype IN ('r', 'm') AND ${notExtension('pg_type', 't.oid')}
  UNION ALL
  SELECT 'aggregate ' || p.oid::pg_catalog.regprocedure::pg_catalog.text
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE ${USER_NS} AND p.prokind = 'a' AND ${notExtension('pg_proc', 'p.oid')}
  UNION ALL
  SELECT 'operator ' || o.oid::pg_catalog.regoperator::pg_catalog.text
    FROM pg_catalog.pg_operator o JOIN pg_catalog.pg_namespace n ON n.oid = o.oprnamespace WHERE ${USER_NS} AND ${notExtension('pg_operator', 'o.oid')}
  UNION ALL
  SELECT 'collation ' || pg_catalog.quote_ident(c.collname)
    FROM pg_catalog.pg_collation c JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace WHERE ${USER_NS} AND ${notExtension('pg_collation', 'c.oid')}`
