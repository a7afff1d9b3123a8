import type { MercuriusLoaders } from 'mercurius'
import type { Resolvers } from '../generated.js'
import { authMutations } from './auth.js'
import { schoolQueries } from './school.js'
import { Student, studentQueries } from './students.js'
import { teacherLoaders, teacherQueries } from './teachers.js'

export const resolvers: Resolvers = {
  Query: { ...schoolQueries, ...studentQueries, ...teacherQueries },
  Mutation: { ...authMutations },
  Student
}

export const loaders: MercuriusLoaders = { ...teacherLoaders }
