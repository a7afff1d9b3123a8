import type { MercuriusLoaders } from 'mercurius'
import type { Resolvers } from '../generated.js'
import { authMutations } from './auth.js'
import { Change, changeLoaders, changeQueries } from './changes.js'
import { classroomLoaders, classroomQueries } from './classrooms.js'
import { DateScalar, DateTimeScalar } from './scalars.js'
import { schoolQueries } from './school.js'
import { Student, studentQueries } from './students.js'
import { teacherLoaders, teacherQueries } from './teachers.js'

export const resolvers: Resolvers = {
  Query: { ...schoolQueries, ...studentQueries, ...teacherQueries, ...classroomQueries, ...changeQueries },
  Mutation: { ...authMutations },
  Date: DateScalar,
  DateTime: DateTimeScalar,
  Student,
  Change
}

export const loaders: MercuriusLoaders = { ...teacherLoaders, ...classroomLoaders, ...changeLoaders }
