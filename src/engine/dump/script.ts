// A plain SQL dump (pg_dump's plain format, or ./dump.ts's) cut into what
// psql would send: each statement whole, each COPY ... FROM stdin with the
// data lines that follow it up to `\.`, and psql's backslash commands on
// lines of their own. Statements end at a semicolon outside quotes, quoted
// identifiers, dollar quotes and comments, as psql's lexer finds them.

export type ScriptItem =
  | { kind: 'sql'; text: string }
  /** COPY ... FROM stdin, and its data in COPY's text format (each line ending in a newline). */
  | { kind: 'copy'; text: string; data: string }
  /** A psql backslash command (`\connect`, `\restrict`, ...), without its backslash. */
  | { kind: 'meta'; command: string }

const COPY_FROM_STDIN = /^\s*COPY\b[\s\S]*\bFROM\s+stdin\b/i

export function splitScript(script: string): ScriptItem[] {
  const items: ScriptItem[] = []
  let i = 0
  let start = 0
  const n = script.length
  const emit = (end: number) => {
    const text = script.slice(start, end).trim()
    start = end
    if (text === '' || /^(--[^\n]*\n?\s*)*$/.test(text)) return
    if (COPY_FROM_STDIN.test(stripComments(text))) {
      // The data starts on the line after the statement and ends at a line `\.`.
      const from = script.indexOf('\n', end) + 1 || n
      const stop = script.indexOf('\n\\.', from - 1)
      const dataEnd = stop < 0 ? n : stop + 1
      items.push({ kind: 'copy', text, data: script.slice(from, dataEnd) })
      const after = script.indexOf('\n', dataEnd)
      i = start = after < 0 ? n : after + 1
      return
    }
    items.push({ kind: 'sql', text })
  }
  while (i < n) {
    const c = script[i]
    if (c === '\\' && (i === 0 || script[i - 1] === '\n') && /^(\s|--[^\n]*\n)*$/.test(script.slice(start, i))) {
      // A backslash command: the rest of its line.
      const eol = script.indexOf('\n', i)
      const line = script.slice(i + 1, eol < 0 ? n : eol).trim()
      items.push({ kind: 'meta', command: line })
      i = start = eol < 0 ? n : eol + 1
    } else if (c === '-' && script[i + 1] === '-') {
      const eol = script.indexOf('\n', i)
      i = eol < 0 ? n : eol + 1
    } else if (c === '/' && script[i + 1] === '*') {
      i = skipBlockComment(script, i)
    } else if (c === "'" || c === '"') {
      i = skipQuoted(script, i, c)
    } else if (c === '$') {
      const tag = /^\$([A-Za-z_\u0080-\uffff][\w\u0080-\uffff]*)?\$/.exec(script.slice(i, i + 64))
      if (tag && !/[\w$]/.test(script[i - 1] ?? '')) {
        const close = script.indexOf(tag[0], i + tag[0].length)
        i = close < 0 ? n : close + tag[0].length
      } else i++
    } else if (c === ';') {
      i++
      emit(i)
    } else i++
  }
  emit(n)
  return items
}

function skipQuoted(s: string, i: number, quote: string): number {
  // E'' strings escape with a backslash too.
  const escapes = quote === "'" && /[eE]/.test(s[i - 1] ?? '') && !/\w/.test(s[i - 2] ?? '')
  for (let j = i + 1; j < s.length; j++) {
    if (escapes && s[j] === '\\') j++
    else if (s[j] === quote) {
      if (s[j + 1] === quote) j++
      else return j + 1
    }
  }
  return s.length
}

function skipBlockComment(s: string, i: number): number {
  // Block comments nest in PostgreSQL.
  let depth = 0
  for (let j = i; j < s.length; j++) {
    if (s[j] === '/' && s[j + 1] === '*') depth++, j++
    else if (s[j] === '*' && s[j + 1] === '/') {
      j++
      if (--depth === 0) return j + 1
    }
  }
  return s.length
}

function stripComments(text: string): string {
  return text.replace(/^(\s*--[^\n]*\n)+/, '')
}
