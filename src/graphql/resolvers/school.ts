import type { QueryResolvers } from '../generated.js'

export const schoolQueries: Pick<QueryResolvers, 'school'> = {
  async school (_parent, _args, ctx) {
    const { db } = ctx.school()
    // The scoped client confines School to the caller's own row.
    return await db.school.findFirstOrThrow()
  }
}
