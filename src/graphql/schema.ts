// The SDL in schema/*.graphql is the source of truth; it is read once at start-up. Descriptions and
// @specifiedBy live there alone: the resolvers add behaviour, never documentation.
import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { buildSchema, type GraphQLSchema } from 'graphql'

const schemaDir = fileURLToPath(new URL('../../schema/', import.meta.url))

/** The text of schema/*.graphql, in file name order. */
export function loadSchema (): string {
  return readdirSync(schemaDir)
    .filter((file) => file.endsWith('.graphql'))
    .sort()
    .map((file) => readFileSync(schemaDir + file, 'utf8'))
    .join('\n')
}

/**
 * The schema built from the SDL, before resolvers are added. Mercurius serves this very object
 * (with the resolvers set on its types), so its printed SDL is what consumers see.
 */
export function buildSdlSchema (): GraphQLSchema {
  return buildSchema(loadSchema())
}
