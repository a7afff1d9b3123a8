// Reads only what a query selects: the GraphQL fields under the current field, mapped to the
// Prisma `select` that serves them.
import type { GraphQLResolveInfo } from 'graphql'
import { parseResolveInfo, type ResolveTree } from 'graphql-parse-resolve-info'

/** For each GraphQL field of a type, the Prisma selection it needs (`{}` when nothing). */
export type SelectionMap = Readonly<Record<string, Readonly<Record<string, unknown>>>>

/** Names of the fields selected on `typeName` below the current field (fragments included). */
export function selectedFields (info: GraphQLResolveInfo, typeName: string): string[] {
  const tree = parseResolveInfo(info) as ResolveTree | null
  const fields = tree?.fieldsByTypeName[typeName] ?? {}
  return Object.values(fields).map((field) => field.name)
}

/** The Prisma `select` for the fields selected on `typeName`; always includes `id`. */
export function prismaSelect (info: GraphQLResolveInfo, typeName: string, map: SelectionMap): Record<string, unknown> {
  const select: Record<string, unknown> = { id: true }
  for (const field of selectedFields(info, typeName)) {
    Object.assign(select, map[field])
  }
  return select
}
