// Node's options for the server process (src/server-flags.ts) are the same wherever the server is
// started: `npm start`, the Docker image's command (and the benchmark and the multi-node test, which
// import them).
import { spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import t from 'tap'
import { SERVER_NODE_FLAGS } from '../src/server-flags.js'

const root = new URL('../', import.meta.url)

t.test('npm start runs the server with them', async (t) => {
  const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { scripts: Record<string, string> }
  const start = pkg.scripts.start ?? ''
  t.match(start, `&& node ${SERVER_NODE_FLAGS.join(' ')} dist/server.js`)
  t.notMatch(start.replace(`node ${SERVER_NODE_FLAGS.join(' ')} dist/server.js`, ''), 'dist/server.js', 'no other start of the server')
})

t.test("the Docker image's command runs the server with them", async (t) => {
  const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8')
  const commands = dockerfile.split('\n').filter((line) => line.startsWith('CMD '))
  t.equal(commands.length, 1)
  t.same(JSON.parse(commands[0]!.slice(4)), ['node', ...SERVER_NODE_FLAGS, 'bin/school-data.js', 'serve'])
})

t.test('this Node accepts them', async (t) => {
  // Node refuses an option it does not know ("bad option") with exit status 9.
  const run = spawnSync(process.execPath, [...SERVER_NODE_FLAGS, '-e', 'process.exit(0)'], { encoding: 'utf8' })
  t.equal(run.status, 0, run.stderr)
})
