import { describe, expect, it } from 'vitest'
import { BytePort } from './byte-port'

/** Everything `port` receives until null (the connection's end). */
function received(port: MessagePort): Promise<(ArrayBuffer | null)[]> {
  const got: (ArrayBuffer | null)[] = []
  return new Promise((resolve) => {
    port.onmessage = (ev: MessageEvent<ArrayBuffer | null>) => {
      got.push(ev.data)
      if (ev.data === null) {
        port.close()
        resolve(got)
      }
    }
  })
}

describe('BytePort', () => {
  it('posts what one turn sends as one buffer, in order, and null after the last bytes', async () => {
    const { port1, port2 } = new MessageChannel()
    const out = new BytePort(port1)
    const got = received(port2)
    out.send(new Uint8Array([1, 2]))
    out.send(new Uint8Array([3]))
    await Promise.resolve()
    await Promise.resolve()
    out.send(new Uint8Array([4, 5]))
    out.close()
    out.send(new Uint8Array([6]))
    const messages = await got
    expect(messages.map((m) => (m === null ? null : [...new Uint8Array(m)]))).toEqual([[1, 2, 3], [4, 5], null])
  })
})
