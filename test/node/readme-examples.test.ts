// The README shows example files whole; the files run in the tests
// (examples/testing-kit/todos.test.ts in the browser project). This keeps the
// README's copy the file that runs.

import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8')

/** The README's code blocks, as written. */
const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1])

describe('README examples', () => {
  it('shows examples/testing-kit/todos.test.ts exactly as the file that runs', () => {
    const file = readFileSync(new URL('../../examples/testing-kit/todos.test.ts', import.meta.url), 'utf8')
    expect(readme).toContain('examples/testing-kit/todos.test.ts')
    // The file may open with a comment the README says in prose.
    const code = file.slice(file.indexOf('import '))
    expect(blocks).toContain(code)
  })
})
