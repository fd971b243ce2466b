// The app: a todo list on the primary. Every action is one SQL statement
// that resolves once durable in IndexedDB; the list re-reads the table after
// each one, so what is shown is what PostgreSQL holds.

import type { Database } from '../src/client'
import { h } from './dom'

export const TODOS_SQL = `
CREATE TABLE IF NOT EXISTS todos (
  id serial PRIMARY KEY,
  title text NOT NULL CHECK (title <> ''),
  done boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);`

interface Todo {
  id: number
  title: string
  done: boolean
}

export class TodoApp {
  constructor(
    private readonly db: Database,
    private readonly root: HTMLElement,
    private readonly onError: (e: unknown) => void,
  ) {
    const input = h('input', { type: 'text', placeholder: 'What needs doing?', 'data-testid': 'todo-input', 'aria-label': 'new todo' })
    const form = h(
      'form',
      {
        class: 'todo-form',
        onsubmit: (ev: Event) => {
          ev.preventDefault()
          const title = input.value.trim()
          if (!title) return
          input.value = ''
          void this.act('INSERT INTO todos (title) VALUES ($1)', [title])
        },
      },
      input,
      h('button', { type: 'submit', 'data-testid': 'todo-add' }, 'Add'),
    )
    this.list = h('ul', { class: 'todos', 'data-testid': 'todo-list' })
    root.replaceChildren(form, this.list) // and the placeholder goes
  }

  private readonly list: HTMLUListElement

  private async act(sql: string, params: unknown[]): Promise<void> {
    try {
      await this.db.query(sql, params)
    } catch (e) {
      this.onError(e)
    }
    await this.refresh()
  }

  async refresh(): Promise<void> {
    const { rows } = await this.db.query<Todo>('SELECT id, title, done FROM todos ORDER BY id')
    this.list.replaceChildren(
      ...rows.map((t) =>
        h(
          'li',
          { class: t.done ? 'done' : '', 'data-testid': 'todo-item' },
          h('input', {
            type: 'checkbox',
            checked: t.done,
            'aria-label': `done: ${t.title}`,
            onchange: () => void this.act('UPDATE todos SET done = NOT done WHERE id = $1', [t.id]),
          }),
          h('span', { class: 'title' }, t.title),
          h('button', { class: 'icon', title: 'delete', 'aria-label': `delete ${t.title}`, onclick: () => void this.act('DELETE FROM todos WHERE id = $1', [t.id]) }, '✕'),
        ),
      ),
    )
    if (rows.length === 0) this.list.append(h('li', { class: 'empty' }, 'Nothing yet: add a todo, or INSERT one from the console.'))
  }
}
