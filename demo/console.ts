// The SQL console: any SQL against the primary on a wire session of its own
// (as psql connects), the result and command tag of each statement, and
// errors the way psql shows them (severity, SQLSTATE, message, detail, hint,
// and a caret under the error's position).

import { PgError, SqlSession, type Database, type QueryOutcome } from '../src/client'
import { h } from './dom'

const EXAMPLES: [string, string][] = [
  ['todos', 'SELECT * FROM todos ORDER BY id;'],
  ['a transaction', "BEGIN;\nINSERT INTO todos (title) VALUES ('from the console');\nUPDATE todos SET done = true WHERE id = (SELECT min(id) FROM todos);\nSELECT pg_logical_emit_message(true, 'console', 'hello, subscribers');\nCOMMIT;"],
  ['a new table', "CREATE TABLE notes (id int PRIMARY KEY, body text, tags text[], meta jsonb);\nINSERT INTO notes VALUES (1, 'replicated as it is created', '{a,b}', '{\"x\": 1}');"],
  ['slots', 'SELECT slot_name, plugin, active, confirmed_flush_lsn FROM pg_replication_slots;'],
  ['an error', 'SELECT * FROM todos WHERE titel = 1;'],
]

/** Command tags of statements that write (their results are durable once the query returns). */
const READS = /^(SELECT|SHOW|EXPLAIN|FETCH|VALUES|TABLE)\b/

export class SqlConsole {
  private readonly input: HTMLTextAreaElement
  private readonly output: HTMLElement
  private readonly button: HTMLButtonElement
  /** A wire session of its own, as psql has: per-statement command tags and the session's transaction state. */
  private session: Promise<SqlSession> | null = null

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
    this.output = h('div', { class: 'console-output', 'data-testid': 'sql-output', 'aria-live': 'polite' })
    this.button = h('button', { 'data-testid': 'sql-run', onclick: () => void this.run() }, 'Run')
    const examples = h('div', { class: 'examples' }, 'Try: ', ...EXAMPLES.map(([label, sql]) => h('button', { class: 'link', onclick: () => ((this.input.value = sql), this.input.focus()) }, label)))
    root.replaceChildren(examples, this.input, h('div', { class: 'console-actions' }, this.button, h('span', { class: 'hint' }, 'Ctrl+Enter')), this.output)
  }

  async run(): Promise<void> {
    if (this.button.disabled) return
    const sql = this.input.value
    const started = performance.now()
    // Running: the button says so and the last answer goes, so nothing old reads as this query's.
    this.button.disabled = true
    this.button.textContent = 'Running…'
    this.output.replaceChildren(h('div', { class: 'running', 'data-testid': 'sql-running' }, 'running…'))
    try {
      this.session ??= SqlSession.open(this.db)
      const outcome = await (await this.session).query(sql)
      this.show(sql, outcome, performance.now() - started)
    } catch (e) {
      // The session itself failed (the database closed, a takeover): the next run opens another.
      this.session = null
      this.showError(sql, e)
    } finally {
      this.button.disabled = false
      this.button.textContent = 'Run'
    }
    this.afterRun()
  }

  private show(sql: string, outcome: QueryOutcome, ms: number): void {
    const blocks = outcome.results.map((r) => {
      const tag = h('div', { class: 'ok', 'data-testid': 'sql-tag' }, r.commandTag)
      if (!r.fields.length) return tag
      const table = h(
        'table',
        { class: 'result' },
        h('thead', {}, h('tr', {}, ...r.fields.map((f) => h('th', {}, f)))),
        h('tbody', {}, ...r.rows.slice(0, 200).map((row) => h('tr', {}, ...row.map((v) => h('td', {}, v ?? 'NULL'))))),
      )
      const more = r.rows.length > 200 ? [h('div', { class: 'timing' }, `first 200 of ${r.rows.length} rows`)] : []
      return h('div', {}, table, ...more, tag)
    })
    const wrote = outcome.results.some((r) => !READS.test(r.commandTag))
    const state = outcome.status === 'T' ? ' · inside a transaction block (COMMIT or ROLLBACK ends it)' : outcome.status === 'E' ? ' · the transaction block failed: ROLLBACK' : ''
    const n = outcome.results.length + (outcome.error ? 1 : 0)
    const timing = h('div', { class: 'timing' }, `${n} statement${n === 1 ? '' : 's'} in ${ms.toFixed(1)} ms${wrote && outcome.status === 'I' ? ', writes durable in IndexedDB' : ''}${state}`)
    this.output.replaceChildren(...blocks, timing)
    if (outcome.error) this.output.append(this.errorBlock(sql, outcome.error))
  }

  private showError(sql: string, e: unknown): void {
    this.output.replaceChildren(e instanceof PgError ? this.errorBlock(sql, e) : h('div', { class: 'error' }, String(e)))
  }

  private errorBlock(sql: string, e: PgError): HTMLElement {
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
    return h('div', { class: 'error', 'data-testid': 'sql-error' }, ...parts)
  }
}
