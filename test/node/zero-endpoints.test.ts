// The page's endpoints zero-cache calls (src/zero/tab/endpoints.ts): its
// fetch to ZERO_MUTATE_URL crosses a MessagePort to a handler of the page.

import { afterEach, describe, expect, it } from 'vitest'
import { routeFetch, serveEndpoint } from '../../src/zero/tab/endpoints'

const ORIGIN = 'http://mutate.tabgres.localhost'
const own = globalThis.fetch

afterEach(() => {
  globalThis.fetch = own
})

describe('endpoints served by the page', () => {
  it("carries zero-cache's request to the handler and its response back", async () => {
    const seen: string[] = []
    routeFetch({
      [ORIGIN]: serveEndpoint(async (req) => {
        seen.push(`${req.method} ${req.url} ${req.headers.get('content-type')} ${await req.text()}`)
        return Response.json({ ok: true }, { status: 201, headers: { 'x-tabgres': 'yes' } })
      }),
    })
    const res = await fetch(`${ORIGIN}/mutate?schema=zero_0&appID=zero`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' })
    expect(seen).toEqual([`POST ${ORIGIN}/mutate?schema=zero_0&appID=zero application/json {"a":1}`])
    expect(res.status).toBe(201)
    expect(res.headers.get('x-tabgres')).toBe('yes')
    expect(await res.json()).toEqual({ ok: true })
  })

  it('answers 500 with the message when the handler throws, as a failing server does', async () => {
    routeFetch({ [ORIGIN]: serveEndpoint(async () => Promise.reject(new Error('mutators not loaded'))) })
    const res = await fetch(`${ORIGIN}/mutate`, { method: 'POST', body: '{}' })
    expect(res.status).toBe(500)
    expect(await res.text()).toBe('mutators not loaded')
  })

  it('fails as fetch does (TypeError) when the handler never answers within the limit', async () => {
    routeFetch({ [ORIGIN]: serveEndpoint(() => new Promise<Response>(() => {})) }, 50)
    const err = await fetch(`${ORIGIN}/mutate`, { method: 'POST', body: '{}' }).then(() => null, (e: unknown) => e as TypeError & { cause: Error })
    expect(err).toBeInstanceOf(TypeError)
    expect(err?.cause.message).toBe(`no response from ${ORIGIN}/mutate in 50 ms`)
  })

  it('leaves every other URL to the real fetch', async () => {
    let called = ''
    globalThis.fetch = (async (input: RequestInfo | URL) => ((called = String(input)), new Response('net'))) as typeof fetch
    routeFetch({ [ORIGIN]: serveEndpoint(async () => new Response('page')) })
    expect(await (await fetch('http://127.0.0.1:9/elsewhere')).text()).toBe('net')
    expect(called).toBe('http://127.0.0.1:9/elsewhere')
  })
})
