// Streaming 'on' with a table published without truncates: its TRUNCATE
// sends nothing, yet the next change of it carries its Relation again, in
// a transaction sent whole and in one streamed in chunks. Changes of an
// unpublished table count toward logical_decoding_work_mem (64kB here).
// One table truncated per transaction: when a transaction truncates two
// tables, PostgreSQL 15 also sends the published one's Relation before the
// transaction's first change, which tabgres does not model (README, known
// differences).
export default {
  database: 'oracle_truncate_stream', slot: 'oracle_truncate_stream',
  options: { proto_version: '2', publication_names: 'p', streaming: 'on' },
  setup: [
    `CREATE TABLE t (id int PRIMARY KEY, v text)`,
    `CREATE TABLE u (id int PRIMARY KEY, v text)`,
    `CREATE PUBLICATION p FOR TABLE t WITH (publish = 'insert, update, delete')`,
  ],
  workload: [
    `INSERT INTO t VALUES (1, 'a')`,
    `BEGIN`,
    `INSERT INTO t VALUES (2, 'b')`,
    `TRUNCATE t`,
    `INSERT INTO t VALUES (3, 'c')`,
    `COMMIT`,
    `BEGIN`,
    `INSERT INTO t SELECT g, repeat('x', 100) || g FROM generate_series(10, 1500) g`,
    `TRUNCATE t`,
    `INSERT INTO t VALUES (4, 'd')`,
    `COMMIT`,
    `INSERT INTO t VALUES (5, 'e')`,
    `BEGIN`,
    `INSERT INTO u SELECT g, repeat('y', 100) || g FROM generate_series(1, 3000) g`,
    `TRUNCATE u`,
    `INSERT INTO t VALUES (6, 'f')`,
    `COMMIT`,
  ],
};
