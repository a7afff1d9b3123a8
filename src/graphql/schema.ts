// The SDL in schema/*.graphql is the source of truth; it is read once at start-up.
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const schemaDir = fileURLToPath(new URL('../../schema/', import.meta.url))

export function loadSchema (): string {
  return readdirSync(schemaDir)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .map((file) => readFileSync(schemaDir + file, 'utf8'))
    .join('\n')
}
