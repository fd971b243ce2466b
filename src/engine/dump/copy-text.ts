// COPY's text format, as pg_dump writes a table's rows: fields separated by
// tabs, NULL as \N, and backslash, tab, newline and carriage return escaped
// with a backslash (every other character goes as it is).

const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }

/** One COPY text line (without its newline) for a row of text values. */
export function copyRow(fields: (string | null)[]): string {
  return fields.map((f) => (f === null ? '\\N' : f.replace(/[\\\t\n\r]/g, (c) => ESCAPES[c]))).join('\t')
}
