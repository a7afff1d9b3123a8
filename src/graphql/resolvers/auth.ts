import type { MutationResolvers } from '../generated.js'
import { invalidCredentials, invalidRefreshToken } from '../errors.js'

export const authMutations: Pick<MutationResolvers, 'login' | 'refreshToken' | 'logout'> = {
  async login (_parent, { username, password }, { auth }) {
    const tokens = await auth.login(username, password)
    if (tokens === null) throw invalidCredentials()
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
