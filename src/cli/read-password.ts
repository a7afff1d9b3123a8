// Reads a password as one line of standard input (a pipe, or typed at a prompt).
import { createInterface } from 'node:readline'

export async function readPassword (input: NodeJS.ReadableStream & { isTTY?: boolean }, prompt: NodeJS.WritableStream): Promise<string> {
  if (input.isTTY === true) prompt.write('Password: ')
  const lines = createInterface({ input, terminal: false })
  // The first line only: the rest of the input is not ours.
  const first = await lines[Symbol.asyncIterator]().next()
  lines.close()
  if (first.done !== true) return first.value.replace(/\r$/, '')
  throw new Error('No password on standard input: send it as one line, e.g. `printf "%s\\n" "$PASSWORD" | school-data user create ...`')
}
