import type { GraphQLSchema } from 'graphql'
import { checkingArguments } from '../arguments.js'
import type { Resolvers } from '../generated.js'
import { authMutations } from './auth.js'
import { Change, changeQueries } from './changes.js'
import { Classroom, classroomQueries } from './classrooms.js'
import { Contact, contactQueries } from './contacts.js'
import { recordMutations } from './mutations.js'
import { dateCoercion, dateTimeCoercion, implementScalar } from './scalars.js'
import { schoolQueries } from './school.js'
import { Student, studentQueries } from './students.js'
import { Teacher, teacherQueries } from './teachers.js'

/**
 * The resolvers of `schema`, the SDL's schema that Mercurius serves (its scalars come from it), each
 * field's arguments checked before it runs (arguments.ts).
 */
export function buildResolvers (schema: GraphQLSchema): Resolvers {
  return checkingArguments(schema, {
    Query: { ...schoolQueries, ...studentQueries, ...teacherQueries, ...classroomQueries, ...contactQueries, ...changeQueries },
    Mutation: { ...authMutations, ...recordMutations },
    Date: implementScalar(schema, 'Date', dateCoercion),
    DateTime: implementScalar(schema, 'DateTime', dateTimeCoercion),
    Student,
    Teacher,
    Classroom,
    Contact,
    Change
  } satisfies Resolvers)
}
