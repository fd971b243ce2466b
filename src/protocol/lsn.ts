// LSNs ("log sequence numbers") are 64-bit WAL positions, written X/Y in hex
// (PostgreSQL docs: pg_lsn type). We keep them as bigint everywhere.

export type Lsn = bigint

const LSN_RE = /^([0-9A-Fa-f]{1,8})\/([0-9A-Fa-f]{1,8})$/

export function parseLsn(text: string): Lsn | null {
  const m = LSN_RE.exec(text)
  if (!m) return null
  return (BigInt('0x' + m[1]) << 32n) | BigInt('0x' + m[2])
}

export function formatLsn(lsn: Lsn): string {
  return `${(lsn >> 32n).toString(16).toUpperCase()}/${(lsn & 0xffffffffn).toString(16).toUpperCase()}`
}
