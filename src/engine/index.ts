// tabgres's engine for Node (`tabgres/engine`): change capture on a PGlite you
// own, replication slots and commands with typed results, and streams of
// pgoutput frames into a sink you write. No wire protocol, no worker: the
// wire server (`tabgres/node`) and the browser worker are built on this.

export { installChangeTracking, isChangeTrackingInstalled, type TrackingOptions } from './install'
export { ENGINE_START_PARAMS } from './start-params'
export {
  runReplicationCommand,
  startReplication,
  streamRequest,
  type CommandContext,
  type CommandResult,
  type StreamOptions,
  type StreamRequest,
} from './replication/walsender'
export type { ReplicationSession, StreamOutcome, StreamSink } from './replication/session'
export type { Retention } from './replication/prune'
export { dumpDatabase } from './dump/dump'

// What a consumer of the frames needs, from the protocol layer.
export { PgError, SqlState, type PgErrorFields } from '../protocol/errors'
export { formatLsn, parseLsn, type Lsn } from '../protocol/lsn'
export { decodeFrame, encodeFrame, type ReplicationFrame } from '../protocol/replication-frames'
export { decodePgoutput, decodePgoutputInStream, PgoutputStreamDecoder } from '../protocol/pgoutput-decode'
export { pgTimestampFromDate, dateFromPgTimestamp, type PgoutputMessage } from '../protocol/pgoutput'
