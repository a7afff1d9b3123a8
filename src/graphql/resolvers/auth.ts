import { getArgumentValues, Kind, type FieldNode, type GraphQLResolveInfo, type OperationDefinitionNode, type SelectionSetNode } from 'graphql'
import type { MercuriusContext } from 'mercurius'
import type { MutationResolvers } from '../generated.js'
import { badUserInput, invalidCredentials, invalidRefreshToken, tooManyRequests } from '../errors.js'

// The login fields of each operation (document node), found once per operation.
const loginFieldsOf = new WeakMap<OperationDefinitionNode, FieldNode[]>()

/** `login` fields at the root of the operation, through aliases and fragments. */
function loginFields (info: GraphQLResolveInfo): FieldNode[] {
  const cached = loginFieldsOf.get(info.operation)
  if (cached !== undefined) return cached
  const collect = (set: SelectionSetNode, seen: Set<string>): FieldNode[] => set.selections.flatMap((selection) => {
    switch (selection.kind) {
      case Kind.FIELD: return selection.name.value === 'login' ? [selection] : []
      case Kind.INLINE_FRAGMENT: return collect(selection.selectionSet, seen)
      case Kind.FRAGMENT_SPREAD: {
        const fragment = info.fragments[selection.name.value]
        if (fragment === undefined || seen.has(fragment.name.value)) return []
        return collect(fragment.selectionSet, new Set(seen).add(fragment.name.value))
      }
    }
    return []
  })
  const fields = collect(info.operation.selectionSet, new Set())
  loginFieldsOf.set(info.operation, fields)
  return fields
}

// Requests whose several login fields were counted already.
const bulkCounted = new WeakSet<MercuriusContext>()

/**
 * Several logins in one request are a way to try passwords in bulk: none is checked, and each
 * counts as an attempt with its own username. They are counted all at once by the first one that
 * runs, since a refused non-null root field stops the later ones.
 */
async function countBulkLogins (fields: FieldNode[], ctx: MercuriusContext, info: GraphQLResolveInfo): Promise<void> {
  if (bulkCounted.has(ctx)) return
  bulkCounted.add(ctx)
  const definition = info.parentType.getFields().login!
  for (const field of fields) {
    const { username } = getArgumentValues(definition, field, info.variableValues) as { username: string }
    await ctx.app.limits.login.attempt(username, ctx.reply.request.ip)
  }
}

export const authMutations: Pick<MutationResolvers, 'login' | 'refreshToken' | 'logout'> = {
  async login (_parent, { username, password }, ctx, info) {
    const { auth, app, reply } = ctx
    const fields = loginFields(info)
    if (fields.length > 1) {
      await countBulkLogins(fields, ctx, info)
      throw badUserInput('Send one login per request')
    }
    // Counted before the password is checked, so concurrent attempts cannot pass the limit.
    const attempt = await app.limits.login.attempt(username, reply.request.ip)
    if (!attempt.allowed) {
      const retryAfter = Math.ceil(attempt.retryAfterMs / 1000)
      app.limits.refused('login')
      throw tooManyRequests(`Too many login attempts: retry in ${retryAfter} s`, retryAfter)
    }
    const tokens = await auth.login(username, password)
    if (tokens === null) throw invalidCredentials()
    await attempt.succeeded()
    return tokens
  },

  async refreshToken (_parent, { refreshToken }, { auth }) {
    const result = await auth.refresh(refreshToken)
    if (result === null) throw invalidRefreshToken()
    return result
  },

  async logout (_parent, { refreshToken }, ctx) {
    return await ctx.auth.logout(ctx.userId(), refreshToken)
  }
}
