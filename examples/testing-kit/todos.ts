// A tiny app on tabgres: what its page would call, each one SQL statement
// with parameters. examples/testing-kit/todos.test.ts tests it.

import type { Database } from 'tabgres'

export interface Todo {
  id: number
  title: string
  done: boolean
}

export async function createSchema(db: Database): Promise<void> {
  await db.exec(`CREATE TABLE IF NOT EXISTS todos (
    id serial PRIMARY KEY,
    title text NOT NULL CHECK (title <> ''),
    done bool NOT NULL DEFAULT false
  )`)
}

export async function addTodo(db: Database, title: string): Promise<Todo> {
  const { rows } = await db.query<Todo>('INSERT INTO todos (title) VALUES ($1) RETURNING id, title, done', [title])
  return rows[0]
}

export async function listTodos(db: Database): Promise<Todo[]> {
  return (await db.query<Todo>('SELECT id, title, done FROM todos ORDER BY id')).rows
}

/** True if the todo was open and is now done. */
export async function completeTodo(db: Database, id: number): Promise<boolean> {
  const { affectedRows } = await db.query('UPDATE todos SET done = true WHERE id = $1 AND NOT done', [id])
  return affectedRows === 1
}
