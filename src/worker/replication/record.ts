// Parser for PostgreSQL's record (composite) text output, as produced by
// record_out: "(f1,f2,...)". An empty unquoted field is NULL; a field in double
// quotes may contain "" and backslash escapes. Fields are the type output of
// each non-dropped column in attnum order.

export function parseRecord(text: string): (string | null)[] {
  if (text.length < 2 || text[0] !== '(' || text[text.length - 1] !== ')') {
    throw new Error(`malformed record literal: ${text.slice(0, 40)}`)
  }
  const out: (string | null)[] = []
  const end = text.length - 1
  let i = 1
  if (i === end) return [null] // "()" is one NULL field
  for (;;) {
    if (text[i] === '"') {
      let v = ''
      i++
      for (;;) {
        const q = text.indexOf('"', i)
        const b = text.indexOf('\\', i)
        if (b !== -1 && (q === -1 || b < q)) {
          v += text.slice(i, b) + text[b + 1]
          i = b + 2
          continue
        }
        if (q === -1) throw new Error('unterminated quoted field in record literal')
        v += text.slice(i, q)
        i = q + 1
        if (text[i] === '"') {
          v += '"'
          i++
          continue
        }
        break
      }
      out.push(v)
    } else {
      let j = text.indexOf(',', i)
      if (j === -1 || j > end) j = end
      out.push(j === i ? null : text.slice(i, j))
      i = j
    }
    if (i === end) break
    if (text[i] !== ',') throw new Error(`malformed record literal at ${i}`)
    i++
  }
  return out
}
