import type { MercuriusLoaders } from 'mercurius'
import type { Resolvers } from '../generated.js'
import { authMutations } from './auth.js'
import { classroomLoaders, classroomQueries } from './classrooms.js'
import { schoolQueries } from './school.js'
import { Student, studentQueries } from './students.js'
import { teacherLoaders, teacherQueries } from './teachers.js'

export const resolvers: Resolvers = {
  Query: { ...schoolQueries, ...studentQueries, ...teacherQueries, ...classroomQueries },
  Mutation: { ...authMutations },
  Student
}

export const loaders: MercuriusLoaders = { ...teacherLoaders, ...classroomLoaders }
