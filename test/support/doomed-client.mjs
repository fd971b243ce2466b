// A client process that gets to one point of a session and is then SIGKILLed
// by test/node/killed-clients.test.ts. Plain JavaScript, so each of the fifty
// starts costs only Node and pg, not a TypeScript loader.
//
//   node test/support/doomed-client.mjs <port> <mode> <steps> <tag>
//
// It prints `ready` once it is at its point (and, in `stream`, `streaming`
// once START_REPLICATION answered, so the test can commit what it streams),
// then never ends by itself: the open socket keeps it alive until the kill.
//
// Modes (rows it writes are `doomed-<tag>-<n>`; none of them is ever committed):
//   txn      BEGIN, <steps> INSERTs (simple and extended protocol alternately), ready
//   aborted  BEGIN, <steps> INSERTs, a failing statement (the block is aborted), ready
//   copy     COPY t (v) FROM STDIN, <steps> rows and half of one more, ready
//   stream   START_REPLICATION on slot `doomed`, ready after <steps> commits (acknowledged)
//   waiter   SELECT count(*) FROM t written to the socket (waiting for the backend
//            another doomed client holds), ready
//   sleep    SELECT pg_sleep(<steps>) written to the socket, ready

import pg from 'pg'

const [portArg, mode, stepsArg, tag] = process.argv.slice(2)
const port = Number(portArg)
const steps = Number(stepsArg)
const say = (line) => process.stdout.write(line + '\n')
const fail = (e) => {
  // The test reads stdout only for `ready`; anything else it shows when a client never gets there.
  process.stderr.write(`doomed ${mode} ${tag}: ${e?.stack ?? e}\n`)
  process.exit(1)
}
const row = (n) => `doomed-${tag}-${n}`

const client = new pg.Client({
  host: '127.0.0.1',
  port,
  user: 'postgres',
  database: 'postgres',
  ...(mode === 'stream' ? { replication: 'database' } : {}),
})
client.on('error', fail)

/** `ready` once everything written so far is in the kernel's socket buffer. */
function readyWhenFlushed() {
  client.connection.stream.write('', () => say('ready'))
}

async function inserts() {
  await client.query('BEGIN')
  for (let n = 0; n < steps; n++) {
    if (n % 2) await client.query('INSERT INTO t (v) VALUES ($1)', [row(n)])
    else await client.query(`INSERT INTO t (v) VALUES ('${row(n)}')`)
  }
}

/** COPY FROM STDIN as pg-copy-streams drives it: a submittable that answers CopyInResponse. */
function copyIn() {
  client.query({
    submit(connection) {
      connection.query('COPY t (v) FROM STDIN')
    },
    handleCopyInResponse(connection) {
      for (let n = 0; n < steps; n++) connection.sendCopyFromChunk(Buffer.from(row(n) + '\n'))
      connection.sendCopyFromChunk(Buffer.from(row(steps).slice(0, 7)))
      readyWhenFlushed()
    },
    handleCommandComplete() {},
    handleReadyForQuery() {
      fail(new Error('COPY ended'))
    },
    handleError(e) {
      fail(e)
    },
  })
}

/** A standby status update: written, flushed and applied up to `lsn` (8 bytes). */
function acknowledge(connection, lsn) {
  const m = Buffer.alloc(34)
  m[0] = 0x72 // 'r'
  lsn.copy(m, 1)
  lsn.copy(m, 9)
  lsn.copy(m, 17)
  const micros = (BigInt(Date.now()) - 946684800000n) * 1000n
  m.writeBigInt64BE(micros, 25)
  m[33] = 0
  connection.sendCopyFromChunk(m)
}

function stream() {
  const connection = client.connection
  let commits = 0
  connection.once('replicationStart', () => {
    say('streaming')
    if (steps === 0) say('ready')
  })
  connection.on('copyData', ({ chunk }) => {
    if (chunk[0] !== 0x77) return // keepalives
    if (chunk[25] === 0x43) {
      // pgoutput Commit
      acknowledge(connection, chunk.subarray(25 + 10, 25 + 18)) // its end LSN
      if (++commits === steps) say('ready')
    }
  })
  client
    .query(`START_REPLICATION SLOT doomed LOGICAL 0/0 (proto_version '1', publication_names 'doomed_pub')`)
    .then(() => fail(new Error('START_REPLICATION ended')), fail)
}

try {
  await client.connect()
  switch (mode) {
    case 'txn':
      await inserts()
      say('ready')
      break
    case 'aborted':
      await inserts()
      await client.query('SELECT 1/0').then(
        () => fail(new Error('1/0 answered')),
        () => {},
      )
      say('ready')
      break
    case 'copy':
      copyIn()
      break
    case 'stream':
      stream()
      break
    case 'waiter':
      client.query('SELECT count(*) FROM t').then(() => {}, fail)
      readyWhenFlushed()
      break
    case 'sleep':
      client.query(`SELECT pg_sleep(${steps})`).then(() => {}, fail)
      readyWhenFlushed()
      break
    default:
      fail(new Error(`unknown mode ${mode}`))
  }
} catch (e) {
  fail(e)
}
