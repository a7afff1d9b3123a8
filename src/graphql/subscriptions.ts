// The subscription fields, set on the schema the endpoint serves (graphql-js's `subscribe` and
// `resolve` of each field): Mercurius takes no Subscription resolvers without its own subscription
// transport, which this service does not use (docs/decisions.md). Each field's arguments are
// checked as every other field's are (arguments.ts) before its `subscribe` runs.
import type { GraphQLFieldResolver, GraphQLSchema } from 'graphql'
import { refuseUnstorableArguments } from './arguments.js'
import type { SubscriptionResolvers } from './generated.js'
import { changeSubscription } from './resolvers/changes.js'

type FieldResolver = GraphQLFieldResolver<unknown, unknown, Record<string, unknown>>

const SUBSCRIPTIONS: Required<SubscriptionResolvers> = { ...changeSubscription }

/** Sets the subscription fields' resolvers on `schema` (the one Mercurius serves). */
export function implementSubscriptions (schema: GraphQLSchema): void {
  const fields = schema.getSubscriptionType()?.getFields() ?? {}
  for (const [name, resolver] of Object.entries(SUBSCRIPTIONS)) {
    const field = fields[name]
    if (field === undefined) throw new Error(`The schema has no subscription field ${name}`)
    const { subscribe, resolve } = resolver as { subscribe: FieldResolver, resolve: FieldResolver }
    field.subscribe = (source, args: Record<string, unknown>, context, info) => {
      refuseUnstorableArguments(args)
      return subscribe(source, args, context, info)
    }
    field.resolve = resolve
  }
}
