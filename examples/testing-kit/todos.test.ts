// The README's "Testing kit" example: the app in ./todos.ts tested in Vitest
// browser mode, a fresh database per test. Runs in the project's browser tests.

import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest'
import type { Database } from 'tabgres'
import { createTestKit, watchStream, type BrowserTestKit } from 'tabgres/testing/browser'
import { addTodo, completeTodo, createSchema, listTodos } from './todos'

let kit: BrowserTestKit
let db: Database

beforeAll(() => {
  kit = createTestKit() // kit workers holding in-memory databases
})
beforeEach(async () => {
  db = await kit.fresh() // new and empty, capture installed
  await createSchema(db)
})
afterEach(() => db.close())
afterAll(() => kit.close())

it('adds and lists todos', async () => {
  await addTodo(db, 'write the docs')
  await addTodo(db, 'ship')
  expect(await listTodos(db)).toEqual([
    { id: 1, title: 'write the docs', done: false },
    { id: 2, title: 'ship', done: false },
  ])
})

it('completes a todo once', async () => {
  const { id } = await addTodo(db, 'write the docs')
  expect(await completeTodo(db, id)).toBe(true)
  expect(await completeTodo(db, id)).toBe(false)
  expect(await listTodos(db)).toEqual([{ id, title: 'write the docs', done: true }])
})

it('starts from an empty database', async () => {
  expect(await listTodos(db)).toEqual([])
  await expect(addTodo(db, '')).rejects.toMatchObject({ code: '23514' }) // check_violation, as a PgError
})

it("streams the app's insert as one transaction", async () => {
  await db.exec('CREATE PUBLICATION app FOR TABLE todos')
  await db.createSlot('test')
  const stream = await db.startReplication({ slot: 'test', options: { proto_version: '1', publication_names: 'app' } })
  const watch = watchStream(stream)

  await addTodo(db, 'streamed')
  const tx = await watch.nextCommit() // rejects after 10 s by default
  expect(tx.messages).toMatchObject([
    { tag: 'R', namespace: 'public', relation: 'todos' },
    { tag: 'I', new: { columns: [{ kind: 't', value: '1' }, { kind: 't', value: 'streamed' }, { kind: 't', value: 'f' }] } },
  ])
  expect(tx.commit.commitLsn).toBe(tx.begin.finalLsn) // Begin and Commit name the same LSN
  await watch.close()
})
