// `node:querystring` for the tab, on URLSearchParams (form encoding, as Node's decodes it).

export function parse(s: string, sep = '&', eq = '='): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {}
  const p = new URLSearchParams(sep === '&' && eq === '=' ? s : s.split(sep).map((kv) => kv.split(eq).join('=')).join('&'))
  for (const [k, v] of p) {
    const prev = out[k]
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v]
  }
  return out
}

export function stringify(o: Record<string, unknown>, sep = '&', eq = '='): string {
  return Object.entries(o)
    .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => `${escape(k)}${eq}${escape(x == null ? '' : String(x))}`))
    .join(sep)
}

export const escape = (s: string) => encodeURIComponent(s)
export const unescape = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '))
export const decode = parse
export const encode = stringify
export default { parse, stringify, escape, unescape, decode, encode }
