// Parser for PostgreSQL's record (composite) text output, as produced by
// record_out: "(f1,f2,...)". An empty unquoted field is NULL; a field in double
// quotes may contain "" and backslash escapes. Fields are the type output of
// each non-dropped column in attnum order.
//
// record_out quotes every field that contains a quote, backslash, comma,
// parenthesis or whitespace (or is empty), so an unquoted field never holds
// ',' or ')': a record literal can be read out of a longer text (the reader's
// batches concatenate them) and its end is found without any delimiter.

const QUOTE = 0x22 // "
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN = 0x28 // (
const CLOSE = 0x29 // )

export function parseRecord(text: string): (string | null)[] {
  const out: (string | null)[] = []
  const end = parseRecordAt(text, 0, out)
  if (end !== text.length) throw new Error(`malformed record literal at ${end}`)
  return out
}

/**
 * Parses the record literal starting at `start` in `text`, appending its
 * fields to `out`; returns the index just past its closing parenthesis.
 */
export function parseRecordAt(text: string, start: number, out: (string | null)[]): number {
  const n = text.length
  if (text.charCodeAt(start) !== OPEN) throw new Error(`malformed record literal: ${text.slice(start, start + 40)}`)
  let i = start + 1
  if (text.charCodeAt(i) === CLOSE) {
    out.push(null) // "()" is one NULL field
    return i + 1
  }
  for (;;) {
    if (i >= n) throw new Error('unterminated record literal')
    if (text.charCodeAt(i) === QUOTE) {
      i++
      let v = ''
      let from = i
      for (;;) {
        if (i >= n) throw new Error('unterminated quoted field in record literal')
        const c = text.charCodeAt(i)
        if (c === BACKSLASH) {
          if (i + 1 >= n) throw new Error('unterminated quoted field in record literal')
          v += text.slice(from, i) + text[i + 1]
          i += 2
          from = i
        } else if (c === QUOTE) {
          if (text.charCodeAt(i + 1) === QUOTE) {
            v += text.slice(from, i + 1)
            i += 2
            from = i
          } else {
            v += text.slice(from, i)
            i++
            break
          }
        } else {
          i++
        }
      }
      out.push(v)
    } else {
      let j = i
      for (; j < n; j++) {
        const c = text.charCodeAt(j)
        if (c === COMMA || c === CLOSE) break
      }
      out.push(j === i ? null : text.slice(i, j))
      i = j
    }
    const c = text.charCodeAt(i)
    if (c === CLOSE) return i + 1
    if (c !== COMMA) throw new Error(`malformed record literal at ${i}`)
    i++
  }
}
