// What the school client needs to know of the data model, from the generated client's public
// exports only: model names and scalar fields are runtime values of the `Prisma` namespace
// (`ModelName`, `<Model>ScalarFieldEnum`); relation fields are not exported as values, so they are
// listed here once and the compiler checks the list against the generated payload types
// (`Prisma.TypeMap['model'][M]['payload']['objects']`): a relation added, removed or retargeted in
// schema.prisma fails `npm run typecheck` until this table says the same.
import { Prisma } from '../generated/prisma/client.js'

export type ModelName = Prisma.ModelName

type Objects<M extends ModelName> = Prisma.TypeMap['model'][M]['payload']['objects']
/** The model name a relation field's payload type carries (`name: "Student"`), `Student[]` for a list. */
type Target<T> = NonNullable<T> extends ReadonlyArray<infer P> ? `${NameOf<P> & string}[]` : NameOf<NonNullable<T>>
type NameOf<P> = P extends { name: infer N } ? N : never
/** Exactly the relation fields of model M, each with the model it leads to. */
type RelationsOf<M extends ModelName> = [keyof Objects<M>] extends [never]
  ? { readonly [field: string]: never }
  : { readonly [F in keyof Objects<M>]-?: Target<Objects<M>[F]> }

const RELATION_TABLE: { readonly [M in ModelName]: RelationsOf<M> } = {
  School: { users: 'User[]', clients: 'Client[]', students: 'Student[]', teachers: 'Teacher[]', classrooms: 'Classroom[]', changes: 'Change[]', teacherChanges: 'TeacherChange[]', academicSessions: 'AcademicSession[]', courses: 'Course[]', agents: 'Agent[]', rosterTombstones: 'RosterTombstone[]' },
  User: { school: 'School', refreshTokens: 'RefreshToken[]' },
  RefreshToken: { user: 'User' },
  Client: { school: 'School', secrets: 'ClientSecret[]' },
  ClientSecret: { client: 'Client' },
  UserAccessChange: {},
  Classroom: { school: 'School', course: 'Course', students: 'Student[]', teachers: 'TeacherClassroom[]' },
  Student: { school: 'School', classroom: 'Classroom' },
  Teacher: { school: 'School', classrooms: 'TeacherClassroom[]' },
  TeacherClassroom: { teacher: 'Teacher', classroom: 'Classroom' },
  AcademicSession: { school: 'School', parent: 'AcademicSession', children: 'AcademicSession[]', courses: 'Course[]' },
  Course: { school: 'School', schoolYear: 'AcademicSession', classrooms: 'Classroom[]' },
  Agent: { school: 'School' },
  Change: { school: 'School' },
  TeacherChange: { school: 'School' },
  RosterTombstone: { school: 'School' },
  AuditEvent: {},
  IdempotencyKey: {}
}

const SCALAR_TABLE: { readonly [M in ModelName]: Readonly<Record<string, string>> } = {
  School: Prisma.SchoolScalarFieldEnum,
  User: Prisma.UserScalarFieldEnum,
  RefreshToken: Prisma.RefreshTokenScalarFieldEnum,
  Client: Prisma.ClientScalarFieldEnum,
  ClientSecret: Prisma.ClientSecretScalarFieldEnum,
  UserAccessChange: Prisma.UserAccessChangeScalarFieldEnum,
  Classroom: Prisma.ClassroomScalarFieldEnum,
  Student: Prisma.StudentScalarFieldEnum,
  Teacher: Prisma.TeacherScalarFieldEnum,
  TeacherClassroom: Prisma.TeacherClassroomScalarFieldEnum,
  AcademicSession: Prisma.AcademicSessionScalarFieldEnum,
  Course: Prisma.CourseScalarFieldEnum,
  Agent: Prisma.AgentScalarFieldEnum,
  Change: Prisma.ChangeScalarFieldEnum,
  TeacherChange: Prisma.TeacherChangeScalarFieldEnum,
  RosterTombstone: Prisma.RosterTombstoneScalarFieldEnum,
  AuditEvent: Prisma.AuditEventScalarFieldEnum,
  IdempotencyKey: Prisma.IdempotencyKeyScalarFieldEnum
}

export const MODEL_NAMES: readonly ModelName[] = Object.values(Prisma.ModelName)

/**
 * The tenant models and their tables: the one list of them. A tenant row belongs to one school:
 * school_id leads every key (on Citus every table is distributed by it, co-located with the first)
 * and row-level security admits the school's rows only (a test checks this list against the
 * catalog).
 */
export const TENANT_TABLE_OF = {
  Classroom: 'classrooms',
  Student: 'students',
  Teacher: 'teachers',
  TeacherClassroom: 'teacher_classrooms',
  Change: 'changes',
  TeacherChange: 'teacher_changes',
  AcademicSession: 'academic_sessions',
  Course: 'courses',
  Agent: 'agents',
  RosterTombstone: 'roster_tombstones'
} as const satisfies Partial<Record<ModelName, string>>

export type TenantModel = keyof typeof TENANT_TABLE_OF

/** The tenant models (wall 1 adds the school to every operation of theirs). */
export const TENANT_MODELS: ReadonlySet<string> = new Set(Object.keys(TENANT_TABLE_OF))

/** The tenant tables, in the list's order. */
export const TENANT_TABLES: ReadonlyArray<typeof TENANT_TABLE_OF[TenantModel]> = Object.values(TENANT_TABLE_OF)

/** A relation field: the model it leads to, and whether it holds a list of them (to-many). */
export type Relation = readonly [field: string, model: ModelName, many: boolean]

/** Relation fields of each model, each with the model it leads to and whether it is a list. */
export const RELATIONS: ReadonlyMap<string, readonly Relation[]> = new Map(
  MODEL_NAMES.map((model) => [model, Object.entries(RELATION_TABLE[model] as Record<string, string>).map(([field, target]): Relation =>
    target.endsWith('[]') ? [field, target.slice(0, -2) as ModelName, true] : [field, target as ModelName, false])])
)

/** Scalar fields of each model. */
export const SCALARS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  MODEL_NAMES.map((model) => [model, new Set(Object.values(SCALAR_TABLE[model]))])
)

/** A model's operations on a client. */
export type Delegate = Record<string, (args: unknown) => Promise<unknown>>

/** The operations of `model` on `client` (`Student` is `client.student`), through the public client API. */
export function delegateOf (client: object, model: string): Delegate {
  return (client as Record<string, Delegate>)[model.charAt(0).toLowerCase() + model.slice(1)]!
}
