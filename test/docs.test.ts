// The documentation as a reader follows it: every relative link of every Markdown file leads to a
// file or heading that exists; set-up sections are complete on their own; the README stays the
// short first page, and points at every page of docs/.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import t from 'tap'
import { anchors, codeBlocks, links, markdown, sqlStatements } from './fixtures/markdown.js'

/** The repository's Markdown files, as git knows them (committed or about to be). */
const FILES = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.md'], { encoding: 'utf8' })
  .split('\n').filter((file) => file !== '' && existsSync(file))

t.test('every relative link of the Markdown leads to a file that exists, and to a heading of it when it names one', async (t) => {
  let checked = 0
  for (const file of FILES) {
    const tokens = markdown(file)
    for (const href of links(tokens)) {
      if (/^[a-z][a-z+.-]*:/i.test(href) || href.startsWith('//')) continue // absolute: not checked here
      const [path = '', fragment] = href.split('#', 2)
      const target = path === '' ? file : normalize(join(dirname(file), decodeURIComponent(path)))
      checked++
      if (!existsSync(target)) {
        t.fail(`${file}: ${href}: no file ${target}`)
        continue
      }
      if (fragment !== undefined && fragment !== '' && target.endsWith('.md') && !anchors(markdown(target)).has(fragment)) {
        t.fail(`${file}: ${href}: no heading #${fragment} in ${target}`)
      }
    }
  }
  t.ok(checked > 100, `${checked} relative links in ${FILES.length} files`)
})

t.test('the README is short, and links every page of docs/', async (t) => {
  const readme = markdown('README.md')
  const lines = execFileSync('wc', ['-l', 'README.md'], { encoding: 'utf8' })
  t.ok(Number.parseInt(lines, 10) <= 250, `README.md has ${lines.trim()} lines`)
  const linked = new Set(links(readme).map((href) => href.split('#')[0]))
  for (const page of FILES.filter((file) => file.startsWith('docs/'))) t.ok(linked.has(page), `README links ${page}`)
})

t.test('the Citus set-up holds every step of "Database roles" (the audit made append-only included), ports in its URLs, and the Citus form of reading rows by hand', async (t) => {
  const roles = codeBlocks(markdown('docs/running/database-roles.md'), 'sql').flatMap(sqlStatements)
  const citus = markdown('docs/running/citus.md')
  const citusSql = codeBlocks(citus, 'sql').flatMap(sqlStatements)
  t.ok(roles.length >= 7, `statements of "Database roles": ${roles.length}`)
  for (const statement of roles) t.ok(citusSql.includes(statement), `the Citus set-up runs: ${statement}`)
  t.ok(citusSql.includes('REVOKE SELECT, UPDATE, DELETE ON access_audit FROM school_data_service'), 'the audit is made append-only')

  const urls = codeBlocks(citus, 'sh').join('\n').match(/postgresql:\/\/[^\s"']+/g) ?? []
  t.ok(urls.length >= 3, `URLs: ${urls.length}`)
  for (const url of urls) t.match(new URL(url).port, /^\d+$/, `${url} names its port`)

  const byHand = codeBlocks(citus, 'sql').map(sqlStatements).find((statements) => statements.some((s) => s.startsWith('SELECT') && s.includes('FROM students')))
  t.same(byHand?.slice(0, 3), ['BEGIN', "SET LOCAL citus.propagate_set_commands = 'local'", "SET LOCAL app.school_id = '<school id>'"],
    'reading by hand on Citus: the propagation set before the school, in one transaction')
})
