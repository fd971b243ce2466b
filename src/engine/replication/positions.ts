// Mapping between change-log sequence numbers and the LSNs the stream reports.
//
// Every change has a durable sequence number (seq, from _tabgres.change_seq).
// A change's LSN is BASE + seq*64; a transaction whose last sequence number is
// L commits at changeLsn(L)+32 and ends at changeLsn(L)+48. So LSNs are derived
// from durable state (they survive restarts and pruning), commit LSNs strictly
// increase, Begin.finalLsn == Commit.commitLsn, and the idle position
// changeLsn(P)+48 stays below any later commit (whose L > P).
// SQL gets the same formula from here (POSITION_LSN_SQL): pg_current_wal_lsn()
// reports the position as the stream does.

import type { Lsn } from '../../protocol/lsn'

export const LSN_BASE = 0x1000000n
const STEP = 64n

export const changeLsn = (seq: bigint): Lsn => LSN_BASE + seq * STEP
export const commitLsn = (lastSeq: bigint): Lsn => changeLsn(lastSeq) + 32n
export const endLsn = (lastSeq: bigint): Lsn => changeLsn(lastSeq) + 48n
/** The write position after everything up to sequence number `pos`. */
export const positionLsn = (pos: bigint): Lsn => changeLsn(pos) + 48n

/**
 * The largest last-sequence number whose transaction commits at or below `lsn`:
 * a transaction streams after `lsn` exactly when its last seq is greater.
 */
export function seqAtOrBelow(lsn: Lsn): bigint {
  if (lsn < LSN_BASE + 32n) return -1n
  return (lsn - LSN_BASE - 32n) / STEP
}

/** _tabgres.position_lsn(pos): positionLsn in SQL, made from the constants above. */
export const POSITION_LSN_SQL = `CREATE OR REPLACE FUNCTION _tabgres.position_lsn(pos bigint) RETURNS pg_lsn
LANGUAGE sql IMMUTABLE AS $$ SELECT '0/0'::pg_lsn + (${LSN_BASE} + pos * ${STEP} + 48) $$;`
