// `node:url` for the tab: WHATWG URL (the platform's) and Node's file-URL helpers.

export const { URL, URLSearchParams } = globalThis

export function fileURLToPath(url: string | URL): string {
  const u = typeof url === 'string' ? new URL(url) : url
  if (u.protocol !== 'file:') throw Object.assign(new TypeError('The URL must be of scheme file'), { code: 'ERR_INVALID_URL_SCHEME' })
  return decodeURIComponent(u.pathname)
}

export function pathToFileURL(path: string): URL {
  return new URL('file://' + encodeURI(path.startsWith('/') ? path : '/' + path).replace(/[?#]/g, encodeURIComponent))
}

/** Node's legacy `url.parse`, from the WHATWG parser (relative URLs against a dummy base). */
export function parse(input: string): Record<string, string | null> {
  const absolute = /^[a-z][a-z0-9+.-]*:/i.test(input)
  const u = new URL(input, 'http://relative.invalid')
  return {
    protocol: absolute ? u.protocol : null,
    host: absolute ? u.host : null,
    hostname: absolute ? u.hostname : null,
    port: absolute ? u.port || null : null,
    pathname: u.pathname,
    search: u.search || null,
    query: u.search ? u.search.slice(1) : null,
    hash: u.hash || null,
    path: u.pathname + u.search,
    href: absolute ? u.href : u.pathname + u.search + u.hash,
  }
}

export function format(u: URL | string | { href?: string }): string {
  return typeof u === 'string' ? u : u instanceof URL ? u.href : (u.href ?? '')
}

export function domainToASCII(domain: string): string {
  return new URL('http://' + domain).hostname
}

export default { URL, URLSearchParams, fileURLToPath, pathToFileURL, parse, format, domainToASCII }
