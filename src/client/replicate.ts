// The consume-apply-acknowledge loop every consumer of a stream needs, written
// once: apply each message in order, acknowledge a transaction only after its
// Commit has been applied (so an acknowledged transaction is never lost by the
// consumer, and the slot never sends it again), and report progress.

import type { Lsn } from '../protocol/lsn'
import type { PgoutputMessage } from '../protocol/pgoutput'
import type { ReplicationStream, StreamMessage } from './stream'

/** An XLogData as messages() yields it: the message, its position and its bytes. */
export type XLogMessage = Extract<StreamMessage, { kind: 'xlog' }>

export interface ReplicateOptions {
  /**
   * Everything up to `lsn` is applied and acknowledged: after each Commit, and
   * at a keepalive that arrives between transactions (the slot may move past
   * changes no publication carries).
   */
  onApplied?(lsn: Lsn): void
  /** Every keepalive, after any reply the stream sent for it. */
  onKeepalive?(walEnd: Lsn, replyRequested: boolean): void
}

/**
 * Reads `stream` to its end, calling `apply` for each pgoutput message in
 * order and awaiting it. A Commit is acknowledged once its `apply` resolved;
 * a consumer that must survive a crash makes its work durable before
 * resolving there. Resolves when the stream ends; rejects with the stream's
 * error, or with `apply`'s after ending the stream (CopyDone keeps what was
 * acknowledged).
 */
export async function replicate(
  stream: ReplicationStream,
  apply: (message: PgoutputMessage, xlog: XLogMessage) => void | Promise<void>,
  options: ReplicateOptions = {},
): Promise<void> {
  let inTransaction = false
  try {
    for await (const m of stream.messages()) {
      if (m.kind === 'keepalive') {
        options.onKeepalive?.(m.walEnd, m.replyRequested)
        // Between transactions everything up to walEnd has been applied.
        if (!inTransaction) {
          stream.ack(m.walEnd)
          options.onApplied?.(m.walEnd)
        }
        continue
      }
      const { message } = m
      if (message.tag === 'B') inTransaction = true
      await apply(message, m)
      if (message.tag === 'C') {
        inTransaction = false
        stream.ack(message.endLsn)
        options.onApplied?.(message.endLsn)
      }
    }
  } catch (e) {
    await stream.close().catch(() => {})
    throw e
  }
}
