// Consumers are never broken by surprise: the current schema against the last released SDL, and
// every breaking change announced in CHANGELOG.md (the format: the head of CHANGELOG.md).
import t from 'tap'
import { CriticalityLevel } from '@graphql-inspector/core'
import { buildSchema, printSchema } from 'graphql'
import { buildSdlSchema } from '../src/graphql/schema.js'
import {
  announcedBreakingChanges,
  changeId,
  readChangelog,
  readReleasedSchema,
  schemaChanges,
  unannouncedBreakingChanges
} from './schema-compat.js'

const describe = (change: { path?: string, type: string, message: string }): string => `${change.path ?? change.type}: ${change.message}`

t.test('the schema breaks nothing of the released SDL that CHANGELOG.md does not announce', async (t) => {
  const unannounced = await unannouncedBreakingChanges(readReleasedSchema(), buildSdlSchema(), readChangelog())
  t.same(unannounced.map(describe), [], 'announce each under "## [Unreleased]" as "- **Breaking:** `path` ..." (CHANGELOG.md)')
  const dangerous = (await schemaChanges(readReleasedSchema(), buildSdlSchema())).filter((c) => c.criticality.level === CriticalityLevel.Dangerous)
  if (dangerous.length > 0) t.comment(`dangerous, not breaking (say them in CHANGELOG.md):\n${dangerous.map(describe).join('\n')}`)
})

t.test('a removed field that the changelog does not announce fails the check, and passes once announced', async (t) => {
  const current = printSchema(buildSdlSchema())
  const withoutEmail = current.replace(/(type Student \{[\s\S]*?)\n {2}"""?Email address\."""?\n {2}email: String\n/, '$1\n')
  t.not(withoutEmail, current, 'Student.email taken out')
  const changed = buildSchema(withoutEmail)

  const unannounced = await unannouncedBreakingChanges(buildSdlSchema(), changed, readChangelog())
  t.same(unannounced.map(changeId), ['Student.email'])
  t.match(unannounced[0]!.message, /Field 'email' was removed from object type 'Student'/)

  const announcing = readChangelog().replace(
    '## [Unreleased]\n',
    '## [Unreleased]\n\n### Removed\n- **Breaking:** `Student.email` removed, deprecated since 2026-06-01\n  (use `Student.emails`).\n'
  )
  t.same(await unannouncedBreakingChanges(buildSdlSchema(), changed, announcing), [])
})

t.test('only a **Breaking:** bullet of the Unreleased section announces a change', async (t) => {
  const changelog = `# Changelog

## [Unreleased]

### Removed
- **Breaking:** \`Student.email\` and \`Query.students.limit\` removed; the latter
  spans two lines (\`Teacher.title\` too).
- \`Student.phone\` removed (no Breaking mark).

* **breaking:** \`E.B\` removed.

## [1.0.0] - 2026-01-01
### Removed
- **Breaking:** \`Student.age\` removed.
`
  t.same([...announcedBreakingChanges(changelog)].sort(), ['E.B', 'Query.students.limit', 'Student.email', 'Teacher.title'])
  t.same([...announcedBreakingChanges('# Changelog\n\n## [1.0.0]\n- **Breaking:** `A.b`\n')], [], 'no Unreleased section: nothing announced')
})
