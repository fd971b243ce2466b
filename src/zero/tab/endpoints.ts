// The app's own HTTP endpoints zero-cache calls (ZERO_MUTATE_URL for custom
// mutators, ZERO_QUERY_URL for synced queries), served by the page: in a tab
// there is no API server, so each endpoint is an origin under .localhost that
// never reaches a network, and zero-cache's fetch to it crosses a MessagePort
// to a handler in the page (`(request: Request) => Promise<Response>`, what a
// fetch-style server route is).
//
// Both sides are here: `serveEndpoint` (page) and `routeFetch` (worker), so
// the one message shape has one writer and one reader.

/** Worker → page: one request. The body is zero-cache's JSON, as text. */
export interface EndpointRequest {
  id: number
  url: string
  method: string
  headers: [string, string][]
  body: string | null
}

/** Page → worker: the handler's response, or why there is none. */
export type EndpointReply =
  | { id: number; status: number; statusText: string; headers: [string, string][]; body: ArrayBuffer }
  | { id: number; error: string }

/** Page side: answers each request on the returned port with `handler`. */
export function serveEndpoint(handler: (request: Request) => Promise<Response>): MessagePort {
  const { port1, port2 } = new MessageChannel()
  port1.onmessage = async ({ data }: MessageEvent<EndpointRequest>) => {
    try {
      const res = await handler(new Request(data.url, { method: data.method, headers: data.headers, body: data.body }))
      const body = await res.arrayBuffer()
      const reply: EndpointReply = { id: data.id, status: res.status, statusText: res.statusText, headers: [...res.headers], body }
      port1.postMessage(reply, [body])
    } catch (e) {
      // What a server that throws does to its caller: a 500 with the message (zero-cache retries 5xx, then reports it).
      const body = new TextEncoder().encode(`${(e as Error)?.message ?? e}`).buffer as ArrayBuffer
      port1.postMessage({ id: data.id, status: 500, statusText: 'Internal Server Error', headers: [['content-type', 'text/plain']], body } satisfies EndpointReply, [body])
    }
  }
  return port2
}

/**
 * How long a request waits for the page's handler: Node's fetch (undici)
 * stops waiting for a response's headers after 300 s, and zero-cache, which
 * passes no signal of its own, is written against that.
 */
export const ENDPOINT_TIMEOUT_MS = 300_000

/**
 * Worker side: wraps the worker's fetch so requests to each origin in
 * `endpoints` go to its port; every other request is the worker's own fetch.
 * Failures look as a network failure does to fetch: a TypeError.
 */
export function routeFetch(endpoints: Record<string, MessagePort>, timeoutMs = ENDPOINT_TIMEOUT_MS): void {
  const own = globalThis.fetch.bind(globalThis)
  let next = 1
  const waiting = new Map<number, (r: EndpointReply) => void>()
  for (const port of Object.values(endpoints)) {
    port.onmessage = ({ data }: MessageEvent<EndpointReply>) => {
      const w = waiting.get(data.id)
      waiting.delete(data.id)
      w?.(data)
    }
  }
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init)
    const port = endpoints[new URL(request.url).origin]
    if (!port) return own(input, init)
    const id = next++
    const body = request.method === 'GET' || request.method === 'HEAD' ? null : await request.text()
    const reply = await new Promise<EndpointReply>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(id)
        resolve({ id, error: `no response from ${request.url} in ${timeoutMs} ms` })
      }, timeoutMs)
      waiting.set(id, (r) => (clearTimeout(timer), resolve(r)))
      port.postMessage({ id, url: request.url, method: request.method, headers: [...request.headers], body } satisfies EndpointRequest)
    })
    if ('error' in reply) throw new TypeError('fetch failed', { cause: new Error(reply.error) })
    return new Response(reply.status === 204 || reply.status === 304 ? null : reply.body, { status: reply.status, statusText: reply.statusText, headers: reply.headers })
  }
}
