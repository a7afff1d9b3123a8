// Reads a password as one line of standard input (a pipe, or typed at a prompt).
import { createInterface } from 'node:readline'

export async function readPassword (input: NodeJS.ReadStream = process.stdin): Promise<string> {
  if (input.isTTY === true) process.stderr.write('Password: ')
  const lines = createInterface({ input, terminal: false })
  for await (const line of lines) {
    lines.close()
    return line.replace(/\r$/, '')
  }
  throw new Error('No password on standard input: send it as one line, e.g. `printf "%s\\n" "$PASSWORD" | school-data user create ...`')
}
