// The scope check: an operation that selects a field outside the caller's scopes, or (a teacher's)
// outside a teacher's reach (TEACHER_UNREACHABLE: a student's contacts), is refused before it runs
// (docs/api/access.md). It runs on the parsed, validated document, in the GraphQL endpoint's
// preExecution hook (src/plugins/graphql.ts), and covers the executed operation whole: aliases
// (a field is checked by its name, not its alias), fragment spreads and inline fragments, nested
// selections, fields under @skip/@include (a document is refused for what it may select). The
// fields an operation selects are found once per operation (Mercurius keeps parsed documents, so a
// document seen before costs a map lookup); each request then compares their few distinct needs
// with its caller's scopes.
import {
  getNamedType, isInterfaceType, isObjectType, Kind, OperationTypeNode,
  type DocumentNode, type FragmentDefinitionNode, type GraphQLNamedType, type GraphQLSchema, type OperationDefinitionNode, type SelectionSetNode
} from 'graphql'
import { holds, outsideTeacherReach, requirementOf, type Access, type Requirement } from '../auth/scopes.js'

export interface OutOfScopeField {
  /** `Type.field`, e.g. `Student.dateOfBirth`. */
  field: string
  /**
   * What the field needs; `unassigned` for a field missing from the table (nobody may read it);
   * `school` for a field outside a teacher's reach, refused to a teacher.
   */
  needs: Needs
}

type Needs = Requirement | 'unassigned' | 'school'

/** What an operation selects: each field with what it needs, the distinct needs, and the fields outside a teacher's reach. */
interface Selection {
  fields: ReadonlyArray<readonly [field: string, needs: Needs]>
  needs: readonly Needs[]
  outsideTeacherReach: readonly string[]
}

/** By operation node: Mercurius reuses parsed documents, so a document seen before is a lookup. */
const selections = new WeakMap<OperationDefinitionNode, Selection>()

function rootType (schema: GraphQLSchema, operation: OperationDefinitionNode): GraphQLNamedType | null | undefined {
  switch (operation.operation) {
    case OperationTypeNode.QUERY: return schema.getQueryType()
    case OperationTypeNode.MUTATION: return schema.getMutationType()
    case OperationTypeNode.SUBSCRIPTION: return schema.getSubscriptionType()
  }
}

/** Every `Type.field` the operation may select, with what it needs (introspection fields excluded). */
function selectionOf (schema: GraphQLSchema, document: DocumentNode, operation: OperationDefinitionNode): Selection {
  const cached = selections.get(operation)
  if (cached !== undefined) return cached
  const fragments = new Map<string, FragmentDefinitionNode>()
  for (const definition of document.definitions) {
    if (definition.kind === Kind.FRAGMENT_DEFINITION) fragments.set(definition.name.value, definition)
  }
  const fields = new Map<string, Needs>()
  const unreachable = new Set<string>()
  // A fragment selects the same fields wherever it is spread: each is walked once.
  const walked = new Set<string>()
  const walk = (set: SelectionSetNode, type: GraphQLNamedType | null | undefined): void => {
    if (type === null || type === undefined) return
    for (const selection of set.selections) {
      switch (selection.kind) {
        case Kind.FIELD: {
          const name = selection.name.value
          // __typename, __schema, __type: the schema, public at GET /schema.graphql.
          if (name.startsWith('__') || (!isObjectType(type) && !isInterfaceType(type))) break
          const definition = type.getFields()[name]
          if (definition === undefined) break // not in a validated document
          fields.set(`${type.name}.${name}`, requirementOf(type.name, name) ?? 'unassigned')
          if (outsideTeacherReach(type.name, name)) unreachable.add(`${type.name}.${name}`)
          if (selection.selectionSet !== undefined) walk(selection.selectionSet, getNamedType(definition.type))
          break
        }
        case Kind.INLINE_FRAGMENT:
          walk(selection.selectionSet, selection.typeCondition === undefined ? type : schema.getType(selection.typeCondition.name.value))
          break
        case Kind.FRAGMENT_SPREAD: {
          const fragment = fragments.get(selection.name.value)
          if (fragment === undefined || walked.has(fragment.name.value)) break
          walked.add(fragment.name.value)
          walk(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value))
          break
        }
      }
    }
  }
  walk(operation.selectionSet, rootType(schema, operation))
  const selection = { fields: [...fields], needs: [...new Set(fields.values())], outsideTeacherReach: [...unreachable] }
  selections.set(operation, selection)
  return selection
}

/**
 * The fields of `operation` that `access` may not select, in the order the document has them: those
 * outside its scopes, and for a teacher those outside a teacher's reach (as needing `school`).
 */
export function outOfScopeFields (
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  access: Access
): OutOfScopeField[] {
  const allowed = (needs: Needs): boolean => needs !== 'unassigned' && needs !== 'school' && holds(access, needs)
  const selection = selectionOf(schema, document, operation)
  const unreachable = access.teacher === true ? selection.outsideTeacherReach : []
  // A few distinct needs per operation: the common case, all held, costs that many checks.
  if (unreachable.length === 0 && selection.needs.every(allowed)) return []
  return selection.fields.flatMap(([field, needs]): OutOfScopeField[] => {
    if (unreachable.includes(field)) return [{ field, needs: 'school' }]
    return allowed(needs) ? [] : [{ field, needs }]
  })
}
