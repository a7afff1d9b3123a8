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

/**
 * `b` merged into the Prisma select `a`: a relation read whole (`true`) stays whole; two partial
 * selects of one relation (`{ select: ... }`) read the union of their fields.
 */
export function mergeSelect (a: Record<string, unknown>, b: Readonly<Record<string, unknown>>): Record<string, unknown> {
  for (const [key, value] of Object.entries(b)) {
    const current = a[key]
    if (current === undefined || value === true) {
      a[key] = value
    } else if (current !== true && isSubSelect(current) && isSubSelect(value)) {
      a[key] = { ...current, select: mergeSelect({ ...current.select }, value.select) }
    }
  }
  return a
}

function isSubSelect (value: unknown): value is { select: Record<string, unknown> } {
  return typeof value === 'object' && value !== null && typeof (value as { select?: unknown }).select === 'object'
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
    const wanted = map[field]
    if (wanted !== undefined) mergeSelect(select, wanted)
  }
  return select
}

/** Map entries for GraphQL fields served by the Prisma column of the same name. */
export function columns (...names: string[]): Record<string, Record<string, true>> {
  return Object.fromEntries(names.map((name) => [name, { [name]: true }]))
}
