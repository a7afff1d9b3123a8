// Reads only what a query selects: the GraphQL fields under the current field, mapped to the
// Prisma `select` that serves them.
import {
  BREAK,
  Kind,
  TypeInfo,
  visit,
  visitWithTypeInfo,
  type DirectiveNode,
  type FragmentDefinitionNode,
  type GraphQLResolveInfo,
  type OperationDefinitionNode,
  type SelectionSetNode
} from 'graphql'
import { parseResolveInfo, type ResolveTree } from 'graphql-parse-resolve-info'

/**
 * The Prisma select of the fields selected below a relation field, on the type `typeName` it
 * leads to, with that type's map.
 */
export type SelectBelow = (typeName: string, map: SelectionMap) => Record<string, unknown>

/**
 * What one GraphQL field reads: a fixed piece of Prisma select, or (a relation) one built from the
 * fields selected below it.
 */
export type FieldSelect = Readonly<Record<string, unknown>> | ((below: SelectBelow) => Readonly<Record<string, unknown>>)

/** For each GraphQL field of a type, the Prisma selection it needs (fields that read nothing: absent). */
export interface SelectionMap { readonly [field: string]: FieldSelect }

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

/**
 * The Prisma `select` for the fields selected on `typeName`; always includes `id`. Worked out once
 * per parsed operation (Mercurius keeps the document of each query text), field path and map, and
 * the same frozen object handed out after that: callers copy it to add to it. An operation whose
 * `@skip` or `@include` takes a variable selects by its variables, and is worked out per call.
 */
export function prismaSelect (
  info: GraphQLResolveInfo,
  typeName: string,
  map: SelectionMap,
  path: ReadonlyArray<[via: string, field: string]> = []
): Readonly<Record<string, unknown>> {
  let kept = rootSelects.get(info.operation)
  if (kept === undefined) rootSelects.set(info.operation, kept = { byVariables: directivesTakeVariables(info), selects: new Map() })
  if (kept.byVariables) return buildSelect(info, typeName, map, path)
  let byPlace = kept.selects.get(map)
  if (byPlace === undefined) kept.selects.set(map, byPlace = new Map<string, Readonly<Record<string, unknown>>>())
  // The field's place in the answer, list indexes left out: every item of a list shares it.
  const key = `${responseKeys(info.path)}\0${info.parentType.name}\0${typeName}\0${path.map(([via, field]) => `${via}.${field}`).join('/')}`
  let select = byPlace.get(key)
  if (select === undefined) {
    select = deepFreeze(buildSelect(info, typeName, map, path))
    byPlace.set(key, select)
  }
  return select
}

/** What prismaSelect worked out for one parsed operation: per map, per place in the answer. */
interface KeptSelects {
  /** An `@skip` or `@include` of the operation takes a variable: nothing is kept. */
  byVariables: boolean
  selects: Map<SelectionMap, Map<string, Readonly<Record<string, unknown>>>>
}

const rootSelects = new WeakMap<OperationDefinitionNode, KeptSelects>()

function responseKeys (path: GraphQLResolveInfo['path'] | undefined): string {
  const keys: string[] = []
  for (let at = path; at !== undefined; at = at.prev) if (typeof at.key === 'string') keys.push(at.key)
  return keys.reverse().join('.')
}

function directivesTakeVariables (info: GraphQLResolveInfo): boolean {
  let found = false
  const visitor = {
    Directive (node: DirectiveNode) {
      if (node.arguments?.some((argument) => argument.value.kind === Kind.VARIABLE) === true) {
        found = true
        return BREAK
      }
      return undefined
    }
  }
  visit(info.operation, visitor)
  for (const fragment of Object.values(info.fragments)) if (!found) visit(fragment, visitor)
  return found
}

function deepFreeze<T extends Record<string, unknown>> (value: T): Readonly<T> {
  for (const inner of Object.values(value)) {
    if (typeof inner === 'object' && inner !== null && !Object.isFrozen(inner)) deepFreeze(inner as Record<string, unknown>)
  }
  return Object.freeze(value)
}

function buildSelect (
  info: GraphQLResolveInfo,
  typeName: string,
  map: SelectionMap,
  path: ReadonlyArray<[via: string, field: string]>
): Record<string, unknown> {
  const select: Record<string, unknown> = { id: true }
  for (const field of selectedFields(info, typeName, path)) {
    const wanted = map[field]
    if (wanted === undefined) continue
    mergeSelect(select, typeof wanted === 'function'
      ? wanted((below, belowMap) => buildSelect(info, below, belowMap, [...path, [typeName, field]]))
      : wanted)
  }
  return select
}

/**
 * The select a batched relation `parentType.field` needs (batches.ts), with the map of the type the
 * field leads to: the union of what every occurrence of that field in `info`'s operation selects
 * (fragments included, `@skip` and `@include` aside: a superset), worked out once per parsed
 * operation, so that one statement serves every call of a batch. `true` (the whole row) when the
 * map has an entry built from a relation's selection.
 */
export function relationSelect (
  info: GraphQLResolveInfo,
  parentType: string,
  field: string,
  map: SelectionMap
): Record<string, unknown> | true {
  let selects = relationSelects.get(info.operation)
  if (selects === undefined) relationSelects.set(info.operation, selects = new Map<string, true | Record<string, unknown>>())
  const key = `${parentType}.${field}`
  let select = selects.get(key)
  if (select === undefined) {
    select = operationSelect(info, parentType, field, map)
    selects.set(key, select)
  }
  return select
}

const relationSelects = new WeakMap<OperationDefinitionNode, Map<string, Record<string, unknown> | true>>()

function operationSelect (info: GraphQLResolveInfo, parentType: string, field: string, map: SelectionMap): Record<string, unknown> | true {
  const places: SelectionSetNode[] = []
  const typeInfo = new TypeInfo(info.schema)
  const visitor = visitWithTypeInfo(typeInfo, {
    Field (node) {
      if (node.name.value === field && typeInfo.getParentType()?.name === parentType && node.selectionSet !== undefined) {
        places.push(node.selectionSet)
      }
    }
  })
  visit(info.operation, visitor)
  for (const fragment of Object.values(info.fragments)) visit(fragment, visitor)
  const names = new Set<string>()
  for (const place of places) collectFieldNames(place, info.fragments, names, new Set())
  const select: Record<string, unknown> = { id: true }
  for (const name of names) {
    const wanted = map[name]
    if (wanted === undefined) continue
    if (typeof wanted === 'function') return true
    mergeSelect(select, wanted)
  }
  return select
}

/** The names of the fields of `set` itself, through its fragments. */
function collectFieldNames (set: SelectionSetNode, fragments: Record<string, FragmentDefinitionNode>, names: Set<string>, seen: Set<string>): void {
  for (const selection of set.selections) {
    if (selection.kind === Kind.FIELD) {
      names.add(selection.name.value)
    } else if (selection.kind === Kind.INLINE_FRAGMENT) {
      collectFieldNames(selection.selectionSet, fragments, names, seen)
    } else if (!seen.has(selection.name.value)) {
      seen.add(selection.name.value)
      const fragment = fragments[selection.name.value]
      if (fragment !== undefined) collectFieldNames(fragment.selectionSet, fragments, names, seen)
    }
  }
}

/** Map entries for GraphQL fields served by the Prisma column of the same name. */
export function columns (...names: string[]): Record<string, Record<string, true>> {
  return Object.fromEntries(names.map((name) => [name, { [name]: true }]))
}
