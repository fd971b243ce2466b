// The SQL console: any SQL against the primary, the result of each
// statement, and errors the way psql shows them (severity, SQLSTATE,
// message, detail, hint, and a caret under the error's position).

import { PgError, type Database } from '../src/client'
import { h } from './dom'

const EXAMPLES: [string, string][] = [
  ['todos', 'SELECT * FROM todos ORDER BY id;'],
  ['a transaction', "BEGIN;\nINSERT INTO todos (title) VALUES ('from the console');\nUPDATE todos SET done = true WHERE id = (SELECT min(id) FROM todos);\nSELECT pg_logical_emit_message(true, 'console', 'hello, subscribers');\nCOMMIT;"],
  ['a new table', "CREATE TABLE notes (id int PRIMARY KEY, body text, tags text[], meta jsonb);\nINSERT INTO notes VALUES (1, 'replicated as it is created', '{a,b}', '{\"x\": 1}');"],
  ['slots', 'SELECT slot_name, plugin, active, confirmed_flush_lsn FROM pg_replication_slots;'],
  ['an error', 'SELECT * FROM todos WHERE titel = 1;'],
]

interface Result {
  fields: { name: string }[]
  rows: Record<string, unknown>[]
  affectedRows?: number
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL'
  if (v instanceof Date) return v.toISOString()
  if (v instanceof Uint8Array) return `\\x${Array.from(v, (b) => b.toString(16).padStart(2, '0')).join('')}`
  if (typeof v === 'object') return JSON.stringify(v)
  return String(v)
}

export class SqlConsole {
  private readonly input: HTMLTextAreaElement
  private readonly output: HTMLElement

  constructor(
    private readonly db: Database,
    root: HTMLElement,
    private readonly afterRun: () => void,
  ) {
    this.input = h('textarea', { spellcheck: false, rows: 5, 'data-testid': 'sql-input', 'aria-label': 'SQL' })
    this.input.value = EXAMPLES[0][1]
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault()
        void this.run()
      }
    })
    this.output = h('div', { class: 'console-output', 'data-testid': 'sql-output' })
    const examples = h('div', { class: 'examples' }, 'Try: ', ...EXAMPLES.map(([label, sql]) => h('button', { class: 'link', onclick: () => ((this.input.value = sql), this.input.focus()) }, label)))
    root.append(
      examples,
      this.input,
      h('div', { class: 'console-actions' }, h('button', { 'data-testid': 'sql-run', onclick: () => void this.run() }, 'Run'), h('span', { class: 'hint' }, 'Ctrl+Enter')),
      this.output,
    )
  }

  async run(): Promise<void> {
    const sql = this.input.value
    const started = performance.now()
    try {
      const results = (await this.db.exec(sql)) as Result[]
      this.showResults(results, performance.now() - started)
    } catch (e) {
      this.showError(sql, e)
    }
    this.afterRun()
  }

  private showResults(results: Result[], ms: number): void {
    const blocks = results.map((r) => {
      if (!r.fields.length) return h('div', { class: 'ok' }, `OK${r.affectedRows !== undefined ? `, ${r.affectedRows} row${r.affectedRows === 1 ? '' : 's'} affected` : ''}`)
      return h(
        'table',
        { class: 'result' },
        h('thead', {}, h('tr', {}, ...r.fields.map((f) => h('th', {}, f.name)))),
        h('tbody', {}, ...r.rows.slice(0, 200).map((row) => h('tr', {}, ...r.fields.map((f) => h('td', {}, cell(row[f.name])))))),
      )
    })
    const last = results.at(-1)
    this.output.replaceChildren(...blocks, h('div', { class: 'timing' }, `${results.length} statement${results.length === 1 ? '' : 's'}, ${last?.rows.length ?? 0} row${last?.rows.length === 1 ? '' : 's'} in the last, ${ms.toFixed(1)} ms (durable)`))
  }

  private showError(sql: string, e: unknown): void {
    if (!(e instanceof PgError)) {
      this.output.replaceChildren(h('div', { class: 'error' }, String(e)))
      return
    }
    const parts: (HTMLElement | string)[] = [
      h('div', { class: 'error-head' }, h('span', { class: 'sqlstate', 'data-testid': 'sql-error-code' }, e.code), ` ${e.severity}: ${e.message}`),
    ]
    if (e.position) {
      // PostgreSQL's position counts characters from 1 in the query string.
      const pos = Number(e.position) - 1
      const lineStart = sql.lastIndexOf('\n', pos - 1) + 1
      const lineEnd = sql.indexOf('\n', pos)
      const line = sql.slice(lineStart, lineEnd < 0 ? undefined : lineEnd)
      parts.push(h('pre', { class: 'caret' }, `${line}\n${' '.repeat(pos - lineStart)}^`))
    }
    if (e.detail) parts.push(h('div', {}, `DETAIL: ${e.detail}`))
    if (e.hint) parts.push(h('div', {}, `HINT: ${e.hint}`))
    this.output.replaceChildren(h('div', { class: 'error', 'data-testid': 'sql-error' }, ...parts))
  }
}
