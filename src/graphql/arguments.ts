// The arguments of every field, checked in one place before the field's resolver runs: a text
// PostgreSQL cannot store (one with a NUL character) anywhere in them, inline or in variables,
// nested in input objects and lists, is refused with BAD_USER_INPUT naming every such path in
// `extensions.invalid`, as a mutation's invalid fields are. The fields are the schema's, so one
// added later is checked without a line here.
import { defaultFieldResolver, isObjectType, type GraphQLFieldResolver, type GraphQLSchema } from 'graphql'
import { NUL_REFUSED, unstorableTexts } from '../validators.js'
import { invalidInput } from './errors.js'

type FieldResolver = GraphQLFieldResolver<unknown, unknown, Record<string, unknown>>

/**
 * Throws BAD_USER_INPUT when a text of `args` (graphql-js's coerced arguments) holds a NUL; each
 * path begins with the argument's name (`["items", 3, "fullName"]`).
 */
export function refuseUnstorableArguments (args: Record<string, unknown>): void {
  const [first, ...rest] = unstorableTexts(args).map((path) => ({ path, message: `${path.join('.')} ${NUL_REFUSED}` }))
  if (first !== undefined) throw invalidInput([first, ...rest])
}

/**
 * `resolvers` with every field of `schema` that takes arguments resolved through
 * refuseUnstorableArguments first (its own resolver, or graphql-js's default one).
 */
export function checkingArguments<R extends object> (schema: GraphQLSchema, resolvers: R): R {
  const checked: Record<string, unknown> = { ...resolvers as Record<string, unknown> }
  for (const type of Object.values(schema.getTypeMap())) {
    // The subscription fields' arguments are checked by their `subscribe` (subscriptions.ts).
    if (!isObjectType(type) || type.name.startsWith('__') || type === schema.getSubscriptionType()) continue
    for (const field of Object.values(type.getFields())) {
      if (field.args.length === 0) continue
      const own = (checked[type.name] ?? {}) as Record<string, FieldResolver | undefined>
      const resolve = own[field.name] ?? defaultFieldResolver
      const resolveChecked: FieldResolver = (source, args, context, info) => {
        refuseUnstorableArguments(args)
        return resolve(source, args, context, info)
      }
      checked[type.name] = { ...own, [field.name]: resolveChecked }
    }
  }
  return checked as R
}
