// Protocol 2 with streaming 'on': transactions larger than
// logical_decoding_work_mem (64kB for this capture, set on the walsender
// connection with ORACLE_REPL_OPTIONS='-c logical_decoding_work_mem=64kB')
// go out as Stream Start / Stop chunks and a Stream Commit.
export default {
  database: 'oracle_stream', slot: 'oracle_stream',
  options: { proto_version: '2', publication_names: 'p', streaming: 'on', messages: 'true' },
  setup: [
    `CREATE TABLE big (id int PRIMARY KEY, v text)`,
    `CREATE TABLE small (id int PRIMARY KEY)`,
    `CREATE PUBLICATION p FOR TABLE big, small`,
  ],
  workload: [
    `INSERT INTO small VALUES (1)`,
    `INSERT INTO big SELECT g, repeat('x', 100) || g FROM generate_series(1, 3000) g`,
    `INSERT INTO small VALUES (2)`,
    `BEGIN`,
    `INSERT INTO small VALUES (3)`,
    `SELECT pg_logical_emit_message(true, 'tx', 'inside a streamed transaction')`,
    `UPDATE big SET v = v || '!' WHERE id <= 1500`,
    `SELECT pg_logical_emit_message(false, 'now', 'non-transactional, mid-stream')`,
    `DELETE FROM big WHERE id > 2500`,
    `COMMIT`,
    `INSERT INTO small VALUES (4)`,
  ],
};
