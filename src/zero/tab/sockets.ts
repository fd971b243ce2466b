// The worker's end of the page's WebSockets (web-socket.ts): each arrives
// as a port and is dialled, with ws's client, to zero-cache's own port on
// the loopback network, where its dispatcher hands it to a syncer as it
// would a connection from the network. Frames are relayed as they come.

import WebSocket from 'ws'
import type { SocketFrame, SocketOpen } from './messages'

export function serveSocket(open: SocketOpen, zeroPort: number): void {
  const { port } = open
  const send = (f: SocketFrame, transfer: Transferable[] = []) => port.postMessage(f, transfer)
  const ws = new WebSocket(`ws://127.0.0.1:${zeroPort}${open.path}`, open.protocols)
  ws.binaryType = 'arraybuffer'
  let closed = false
  ws.on('open', () => send({ type: 'open', protocol: ws.protocol }))
  ws.on('message', (data: ArrayBuffer | Buffer, isBinary: boolean) => {
    if (!isBinary) return send({ type: 'message', data: data.toString() })
    const copy = data instanceof ArrayBuffer ? data : (data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer)
    send({ type: 'message', data: copy }, [copy])
  })
  ws.on('error', (e: Error) => send({ type: 'error', message: e.message }))
  ws.on('close', (code: number, reason: Buffer) => {
    closed = true
    send({ type: 'close', code, reason: reason.toString(), wasClean: code !== 1006 })
    port.close()
  })
  port.onmessage = ({ data }: MessageEvent<SocketFrame>) => {
    if (closed) return
    if (data.type === 'send') ws.send(data.data)
    else if (data.type === 'end') ws.close(data.code, data.reason)
  }
}
