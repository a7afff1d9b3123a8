// A migration script split into its statements by PostgreSQL's own parser (libpg-query), as
// `school-data migrate` sends them on a distributed Citus database (src/db/migrations/adapters.ts):
// a function body, a DO block, a string or a comment holding a semicolon is never cut, text after a
// multi-byte character keeps its place, and every migration of the project splits into statements
// that together are the whole script.
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import t from 'tap'
import { statementsOf } from '../src/db/migrations/adapters.js'
import { migrationsDir } from '../src/db/migrations/index.js'

t.test('statements with semicolons inside stay whole', async (t) => {
  const script = `-- A comment; with a semicolon
CREATE TABLE "a" ("x" TEXT DEFAULT 'b;c');
CREATE FUNCTION "f"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW."x" := 'é; ü'; -- naïve; comment
  RETURN NEW;
END
$$;
DO $do$ BEGIN PERFORM 1; PERFORM 2; END $do$;
/* a block; comment */ CREATE TRIGGER "t" BEFORE UPDATE ON "a" FOR EACH ROW EXECUTE FUNCTION "f"()`
  const statements = await statementsOf(script)
  t.equal(statements.length, 4)
  t.match(statements[0], /^-- A comment; with a semicolon\nCREATE TABLE "a" \("x" TEXT DEFAULT 'b;c'\)$/)
  t.match(statements[1], /^CREATE FUNCTION "f"\(\)[\s\S]*NEW\."x" := 'é; ü'; -- naïve; comment[\s\S]*END\n\$\$$/)
  t.equal(statements[2], 'DO $do$ BEGIN PERFORM 1; PERFORM 2; END $do$')
  t.equal(statements[3], '/* a block; comment */ CREATE TRIGGER "t" BEFORE UPDATE ON "a" FOR EACH ROW EXECUTE FUNCTION "f"()')
})

t.test('a script that does not parse is refused, not cut', async (t) => {
  await t.rejects(statementsOf('CREATE TABLE "a" (; SELECT 1'), /syntax error/)
})

t.test('every migration splits into statements that make up the whole script', async (t) => {
  const names = (await readdir(migrationsDir, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name)
  t.ok(names.length > 10)
  for (const name of names) {
    const script = await readFile(join(migrationsDir, name, 'migration.sql'), 'utf8')
    const statements = await statementsOf(script)
    const squeeze = (text: string): string => text.replace(/\s+/g, '')
    t.equal(squeeze(statements.join(';')), squeeze(script).replace(/;$/, ''), `${name}: ${statements.length} statements, nothing lost`)
  }
})
