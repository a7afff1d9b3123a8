// The documentation as a reader follows it: set-up sections complete on their own.
import t from 'tap'
import { codeBlocks, markdown, section, sqlStatements } from './fixtures/markdown.js'

const README = markdown('README.md')

t.test('the Citus set-up holds every step of "Database roles" (the audit made append-only included), ports in its URLs, and the Citus form of reading rows by hand', async (t) => {
  const roles = codeBlocks(section(README, 'Database roles'), 'sql').flatMap(sqlStatements)
  const citus = section(README, 'Sharding by school (Citus)')
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
