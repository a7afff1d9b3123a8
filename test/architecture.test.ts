// docs/architecture.md walks a fresh read and a command-line write file by file: every file
// it names exists and holds the name it gives, so a rename that leaves the page behind fails here.
import { existsSync, readFileSync } from 'node:fs'
import t from 'tap'
import type { Tokens } from 'marked'
import { markdown, section } from './fixtures/markdown.js'

const PAGE = 'docs/architecture.md'
const tokens = markdown(PAGE)

/** The code spans of a table cell, as written. */
const codeOf = (cell: Tokens.TableCell): string[] =>
  cell.tokens.filter((token): token is Tokens.Codespan => token.type === 'codespan').map((token) => token.text)

for (const heading of ['The path of a fresh read', 'The path of a write from the command line']) {
  t.test(`${PAGE}, "${heading}": each step's file exists and holds its name`, async (t) => {
    const table = section(tokens, heading).find((token): token is Tokens.Table => token.type === 'table')
    t.ok(table, 'the walk is a table')
    t.same(table!.header.map((cell) => cell.text), ['Step', 'File', 'Name', 'What happens'])
    t.ok(table!.rows.length >= 10, `${table!.rows.length} steps`)
    for (const row of table!.rows) {
      const [step, fileCell, nameCell] = row
      const [file] = codeOf(fileCell!)
      const [name] = codeOf(nameCell!)
      if (file === undefined || name === undefined || !existsSync(file)) {
        t.fail(`step ${step!.text}: a file that exists and a name, in code (${fileCell!.text}, ${nameCell!.text})`)
        continue
      }
      const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
      t.match(readFileSync(file, 'utf8'), new RegExp(`\\b${escaped}\\b`), `step ${step!.text}: ${file} holds ${name}`)
    }
  })
}
