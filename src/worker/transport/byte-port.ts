// A wire session's backend bytes onto a MessagePort. A session writes many
// small messages in one turn (a query's RowDescription, DataRows and
// CommandComplete; a replication stream's CopyData), and Chromium pays per
// posted, transferred buffer; the bytes are one stream to the client, so
// what a turn writes goes out as one buffer, posted once the turn is done.

import { concatBytes } from '../../protocol/backend'

export class BytePort {
  private parts: Uint8Array[] = []
  private scheduled = false
  private closed = false

  constructor(private readonly port: MessagePort) {}

  send(bytes: Uint8Array): void {
    if (this.closed || bytes.byteLength === 0) return
    this.parts.push(bytes)
    if (this.scheduled) return
    this.scheduled = true
    queueMicrotask(() => {
      this.scheduled = false
      this.flush()
    })
  }

  /** What was sent goes first, then null: the connection's end. */
  close(): void {
    if (this.closed) return
    this.flush()
    this.closed = true
    this.port.postMessage(null)
    this.port.close()
  }

  private flush(): void {
    if (this.parts.length === 0 || this.closed) return
    const out = concatBytes(this.parts)
    this.parts = []
    this.port.postMessage(out.buffer, [out.buffer])
  }
}
