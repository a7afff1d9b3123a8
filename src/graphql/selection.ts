// Reads only what a query selects: the GraphQL fields under the current field, mapped to the
// Prisma `select` that serves them.
import type { GraphQLResolveInfo } from 'graphql'
import { parseResolveInfo, type ResolveTree } from 'graphql-parse-resolve-info'

/** For each GraphQL field of a type, the Prisma selection it needs (`{}` when nothing). */
export type SelectionMap = Readonly<Record<string, Readonly<Record<string, unknown>>>>

/**
 * Names of the fields selected on `typeName` below the current field (fragments included), or
 * below the fields `path` leads to from there (e.g. ['nodes'] of a page type `via`).
 */
export function selectedFields (info: GraphQLResolveInfo, typeName: string, path: ReadonlyArray<[via: string, field: string]> = []): string[] {
  let trees: ResolveTree[] = [parseResolveInfo(info) as ResolveTree]
  for (const [via, field] of path) {
    trees = trees.flatMap((tree) => Object.values(tree?.fieldsByTypeName[via] ?? {}).filter((f) => f.name === field))
  }
  return trees.flatMap((tree) => Object.values(tree?.fieldsByTypeName[typeName] ?? {}).map((field) => field.name))
}

/** The Prisma `select` for the fields selected on `typeName`; always includes `id`. */
export function prismaSelect (
  info: GraphQLResolveInfo,
  typeName: string,
  map: SelectionMap,
  path: ReadonlyArray<[via: string, field: string]> = []
): Record<string, unknown> {
  const select: Record<string, unknown> = { id: true }
  for (const field of selectedFields(info, typeName, path)) {
    Object.assign(select, map[field])
  }
  return select
}

/** Map entries for GraphQL fields served by the Prisma column of the same name. */
export function columns (...names: string[]): Record<string, Record<string, true>> {
  return Object.fromEntries(names.map((name) => [name, { [name]: true }]))
}
