// Every record mutation for every set of scopes a client can hold (each grant a subset of SCOPES can
// give): allowed by its write scope, it answers without an internal error, with the fields the
// client's read scopes grant (the bulk upsert creating, changing and leaving students unchanged
// whatever the client may read); not allowed, it is FORBIDDEN. Selecting a field outside the read
// scopes, writing a column outside the write or read scopes, or naming a student by a key the client
// may not read is FORBIDDEN too, before anything is written (docs/api/mutations.md, docs/api/access.md).
import {
  getNamedType, isLeafType, isNonNullType, isObjectType, type GraphQLObjectType
} from 'graphql'
import t from 'tap'
import { addClassroom } from '../src/records/classrooms.js'
import { createStudent, upsertStudents } from '../src/records/students.js'
import { addTeacher } from '../src/records/teachers.js'
import { schoolTarget } from '../src/records/writes.js'
import { FIELD_SCOPES, holds, requirementOf, SCOPES, unwritableColumns, type Access, type Scope } from '../src/auth/scopes.js'
import { buildSdlSchema } from '../src/graphql/schema.js'
import { build, gql, seedSchool, testDatabase, unique, type GraphQLResponse } from './helper.js'
import { clientToken, seedClient } from './fixtures/oauth.js'

// 35 clients, each about 20 requests, on a shared machine.
t.setTimeout(300_000)

const schema = buildSdlSchema()

/** Every non-empty subset of SCOPES: what a client can be given. */
const SUBSETS: Scope[][] = Array.from({ length: 2 ** SCOPES.length - 1 }, (_, i) =>
  SCOPES.filter((_scope, bit) => ((i + 1) & (1 << bit)) !== 0))

/**
 * What a client can hold, one set per grant: no read scope, the core or the full roster, each with
 * or without demographics; no write scope, the core's or every field's; deleting or not.
 * `roster.readonly` grants `roster-core.readonly` and `roster.createput` `roster-core.createput`,
 * so every other subset grants what one of these does (the first test checks it).
 */
const COMBINATIONS: Scope[][] = ([[], ['roster-core.readonly'], ['roster.readonly']] as Scope[][]).flatMap((read) =>
  ([[], ['roster-demographics.readonly']] as Scope[][]).flatMap((demographics) =>
    ([[], ['roster-core.createput'], ['roster.createput']] as Scope[][]).flatMap((write) =>
      ([[], ['roster.delete']] as Scope[][]).map((deletes) => [...read, ...demographics, ...write, ...deletes]))))
  .filter((scopes) => scopes.length > 0)

const grants = (scopes: readonly Scope[]): boolean[] => SCOPES.map((scope) => holds({ scopes, user: false }, scope))

/**
 * The selection of `typeName`'s fields a caller of `access` may read (every field when `access` is
 * undefined): its scalars, and one level of the objects below with their scalars. `__typename`
 * always, so that a caller who may read none of them still has a selection.
 */
function selectionOf (typeName: string, access: Access | undefined, depth = 0): string {
  const type = schema.getType(typeName) as GraphQLObjectType
  const parts = ['__typename']
  for (const [name, field] of Object.entries(type.getFields())) {
    const needs = requirementOf(typeName, name)
    if (access !== undefined && (needs === undefined || !holds(access, needs))) continue
    if (field.args.some((arg) => isNonNullType(arg.type) && arg.defaultValue === undefined)) continue
    const named = getNamedType(field.type)
    if (isLeafType(named)) parts.push(name)
    else if (isObjectType(named) && depth === 0) parts.push(`${name} { ${selectionOf(named.name, access, 1)} }`)
  }
  return parts.join(' ')
}

/** `Type.field` of every field an answer holds, at any depth (`__typename` aside). */
function fieldsOf (typeName: string, value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap((item) => fieldsOf(typeName, item))
  if (value === null || typeof value !== 'object') return []
  const type = schema.getType(typeName) as GraphQLObjectType
  return Object.entries(value).flatMap(([name, inner]) => {
    if (name === '__typename') return []
    const named = getNamedType(type.getFields()[name]!.type)
    return [`${typeName}.${name}`, ...(isObjectType(named) ? fieldsOf(named.name, inner) : [])]
  })
}

/** The fields of `fields` a caller of `access` may write to `model`. */
function writable (access: Access, model: string, fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(fields).filter(([column]) => unwritableColumns(access, model, [column]).length === 0))
}

/** The members of `expected` that the answer selected: what it must hold of what was written. */
function selected (answer: Record<string, unknown>, expected: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(expected).filter(([key]) => key in answer))
}

/** The variables' definitions of an operation sending `variables`. */
function header (variables: Record<string, unknown>): string {
  return `(${Object.keys(variables).map((name) => `$${name}: ${VARIABLE_TYPES[name]!}`).join(', ')})`
}

/** The GraphQL type of each variable the mutations above take. */
const VARIABLE_TYPES: Readonly<Record<string, string>> = {
  student: 'StudentInput!',
  change: 'StudentChange!',
  teacher: 'TeacherInput!',
  teacherChange: 'TeacherChange!',
  classroom: 'ClassroomInput!',
  items: '[StudentUpsert!]!',
  sourcedId: 'String!',
  number: 'String!',
  room: 'String!'
}

const codes = (res: GraphQLResponse): unknown[] => (res.body.errors ?? []).map((e) => e.extensions?.code)

t.test('the sets of scopes below grant what every set a client can be given grants', async (t) => {
  t.equal(SUBSETS.length, 63)
  t.equal(COMBINATIONS.length, 35)
  const granted = new Set(COMBINATIONS.map((scopes) => grants(scopes).join()))
  t.equal(granted.size, COMBINATIONS.length, 'each grants something of its own')
  t.same(SUBSETS.filter((scopes) => !granted.has(grants(scopes).join())), [], 'every subset of SCOPES grants what one of them does')
})

t.test('every mutation, for every set of scopes a client can hold: allowed, it answers the fields the scopes grant; else FORBIDDEN', async (t) => {
  const app = await build(t)
  const db = await testDatabase()
  const { schoolId } = await seedSchool(unique('Scoped Writes School'))
  const target = await schoolTarget(db, schoolId)

  // Each combination has records and a client of its own: they run side by side.
  t.jobs = 8
  for (const scopes of COMBINATIONS) {
    void t.test(scopes.join(' '), async (t) => {
      const access: Access = { scopes, user: false }
      const token = await clientToken(app, await seedClient(schoolId, scopes))
      const p = unique('w')
      // What the mutations act on, written by the school's operator with every field.
      const roomA = `${p} A`
      const roomB = `${p} B`
      await addClassroom(target, { name: roomB })
      await addClassroom(target, { name: `${p} gone`, sourcedId: `${p}-c-gone` })
      const full = { email: `${p}@example.org`, dateOfBirth: '2015-12-10', givenName: 'Ada', familyName: 'Lovelace', fullName: 'Ada Lovelace' }
      await createStudent(db, { schoolId, sourcedId: `${p}-s`, studentNumber: `${p}-n`, classroom: roomA, ...full })
      // The bulk upsert's students: one to change, one already as the item gives it.
      const upsertFields = (key: string): Record<string, unknown> =>
        writable(access, 'Student', { preferredName: 'Up', gradeLevel: 'GRADE_2', studentNumber: `${p}-${key}`, email: `${p}-${key}@example.org`, dateOfBirth: '2016-02-29' })
      await upsertStudents(target, [
        { sourcedId: `${p}-by-number`, studentNumber: `${p}-bn`, ...full },
        { sourcedId: `${p}-gone`, studentNumber: `${p}-gn`, ...full },
        { sourcedId: `${p}-gone-by-number`, studentNumber: `${p}-gbn`, ...full },
        { sourcedId: `${p}-u-change`, ...full },
        { sourcedId: `${p}-u-same`, fullName: 'Same', ...upsertFields('us') }
      ])
      await addTeacher(target, { sourcedId: `${p}-t`, fullName: 'Grace Hopper', email: `${p}-t@example.org`, title: 'Teacher' })
      await addTeacher(target, { sourcedId: `${p}-t-gone`, fullName: 'Gone Teacher', email: `${p}-tg@example.org`, title: 'Teacher' })

      /** Sends `field(args) { selection }` of `type`; checks the answer as the scopes say; returns it. */
      const check = async (name: string, args: string, variables: Record<string, unknown>, type: string, expected: Record<string, unknown>, can = true): Promise<Record<string, any> | undefined> => {
        const res = await gql(app, `mutation ${header(variables)} { ${name}${args} { ${selectionOf(type, access)} } }`, { token, variables })
        const needs = requirementOf('Mutation', name)!
        if (!holds(access, needs) || !can) {
          t.same(codes(res), ['FORBIDDEN'], `${name}: FORBIDDEN`)
          return undefined
        }
        t.same(res.body.errors, undefined, `${name}: answered, no error`)
        const answer = res.body.data?.[name] as Record<string, any> | undefined
        t.same(fieldsOf(type, answer).filter((field) => { const [on, f] = field.split('.'); return !holds(access, requirementOf(on!, f!)!) }), [],
          `${name}: only fields the scopes grant`)
        if (answer !== undefined) t.match(answer, selected(answer, expected), `${name}: the answer is the write`)
        return answer
      }
      const may = (scope: Scope): boolean => holds(access, scope)

      const studentInput = { sourcedId: `${p}-new`, fullName: 'New Student', preferredName: 'Newt', ...writable(access, 'Student', { studentNumber: `${p}-nn`, email: `${p}-new@example.org`, dateOfBirth: '2014-01-02' }) }
      await check('createStudent', '(input: $student)', { student: { ...studentInput, classroom: { name: roomA } } }, 'Student',
        { ...studentInput, classroomName: roomA, classroom: { name: roomA }, version: 1 })

      const change = { preferredName: 'Addie', ...writable(access, 'Student', { email: `${p}-changed@example.org`, dateOfBirth: '2015-12-11' }) }
      await check('changeStudent', '(student: { sourcedId: $sourcedId }, input: $change)', { sourcedId: `${p}-s`, change }, 'Student', { ...change, sourcedId: `${p}-s`, version: 2 })
      await check('changeStudent', '(student: { studentNumber: $number }, input: { preferredName: "By Number" })', { number: `${p}-bn` }, 'Student',
        { preferredName: 'By Number', sourcedId: `${p}-by-number`, version: 2 }, may('roster.readonly'))
      await check('placeStudent', '(student: { sourcedId: $sourcedId }, classroom: { name: $room })', { sourcedId: `${p}-s`, room: roomB }, 'Student',
        { classroomName: roomB, classroom: { name: roomB }, version: 3 })
      await check('removeStudentFromClassroom', '(student: { sourcedId: $sourcedId })', { sourcedId: `${p}-s` }, 'Student', { classroomName: null, classroom: null, version: 4 })

      const teacherInput = { sourcedId: `${p}-t-new`, fullName: 'New Teacher', ...writable(access, 'Teacher', { email: `${p}-tn@example.org`, title: 'Dr' }) }
      await check('createTeacher', '(input: $teacher)', { teacher: teacherInput }, 'Teacher', { ...teacherInput, version: 1 })
      const teacherChange = { preferredName: 'Amazing Grace', ...writable(access, 'Teacher', { title: 'Rear Admiral' }) }
      await check('changeTeacher', '(teacher: { sourcedId: $sourcedId }, input: $teacherChange)', { sourcedId: `${p}-t`, teacherChange }, 'Teacher', { ...teacherChange, version: 2 })
      await check('assignTeacher', '(teacher: { sourcedId: $sourcedId }, classroom: { name: $room }, role: ASSISTANT)', { sourcedId: `${p}-t`, room: roomA }, 'ClassroomAssignment',
        { role: 'ASSISTANT', teacher: { sourcedId: `${p}-t` }, classroom: { name: roomA } })
      await check('endTeacherAssignment', '(teacher: { sourcedId: $sourcedId }, classroom: { name: $room })', { sourcedId: `${p}-t`, room: roomA }, 'ClassroomAssignment',
        { role: 'ASSISTANT', classroom: { name: roomA } })

      const classroomInput = { name: `${p} New`, sourcedId: `${p}-c-new`, gradeLevel: 'GRADE_4', subject: 'Math' }
      await check('createClassroom', '(input: $classroom)', { classroom: classroomInput }, 'Classroom', { ...classroomInput, version: 1 })
      await check('changeClassroom', '(classroom: { name: $room }, input: { subject: "Art" })', { room: roomB }, 'Classroom', { name: roomB, subject: 'Art', version: 2 })

      const items = [
        { sourcedId: `${p}-u-change`, fullName: 'After', ...upsertFields('uc') },
        { sourcedId: `${p}-u-same`, fullName: 'Same', ...upsertFields('us') },
        { sourcedId: `${p}-u-new`, fullName: 'Upserted', ...upsertFields('un') }
      ]
      const upserted = await check('upsertStudents', '(items: $items)', { items }, 'StudentUpsertResult', { created: 1, changed: 1, unchanged: 1 })
      if (upserted !== undefined) {
        t.same(upserted.items.map((i: { sourcedId: string, outcome: string, version: number }) => [i.sourcedId, i.outcome, i.version]),
          [[`${p}-u-change`, 'CHANGED', 2], [`${p}-u-same`, 'UNCHANGED', 1], [`${p}-u-new`, 'CREATED', 1]], 'upsertStudents: each item\'s outcome and version')
        const again = await check('upsertStudents', '(items: $items)', { items }, 'StudentUpsertResult', { created: 0, changed: 0, unchanged: 3 })
        t.ok(again !== undefined, 'upsertStudents: the same batch again changes nothing')
      }

      await check('deleteStudent', '(student: { sourcedId: $sourcedId })', { sourcedId: `${p}-gone` }, 'DeletedRecord', { recordType: 'STUDENT', sourcedId: `${p}-gone` })
      await check('deleteStudent', '(student: { studentNumber: $number })', { number: `${p}-gbn` }, 'DeletedRecord',
        { recordType: 'STUDENT', sourcedId: `${p}-gone-by-number` }, may('roster.readonly'))
      await check('deleteTeacher', '(teacher: { sourcedId: $sourcedId })', { sourcedId: `${p}-t-gone` }, 'DeletedRecord', { recordType: 'TEACHER', sourcedId: `${p}-t-gone` })
      await check('deleteClassroom', '(classroom: { sourcedId: $sourcedId })', { sourcedId: `${p}-c-gone` }, 'DeletedRecord', { recordType: 'CLASSROOM', sourcedId: `${p}-c-gone` })

      // Refusals before anything runs: a field outside the read scopes, a column outside the write
      // or read scopes.
      const exists = async (sourcedId: string): Promise<boolean> => await db.forSchool(schoolId).student.count({ where: { sourcedId } }) > 0
      const everyField = await gql(app, `mutation { createStudent(input: { sourcedId: "${p}-every", fullName: "Every Field" }) { ${selectionOf('Student', undefined)} } }`, { token })
      const unreadable = Object.values(FIELD_SCOPES.Student!).filter((needs) => !holds(access, needs))
      if (!may('roster-core.createput') || unreadable.length > 0) {
        t.same(codes(everyField), ['FORBIDDEN'], 'selecting a field outside the scopes is FORBIDDEN')
        t.equal(await exists(`${p}-every`), false, 'and nothing was written')
      } else {
        t.same(everyField.body.errors, undefined, 'a client that reads every field selects every field')
      }
      const everyColumn = { fullName: 'Every Column', studentNumber: `${p}-ec`, email: `${p}-ec@example.org`, dateOfBirth: '2015-01-01' }
      const unwritten = unwritableColumns(access, 'Student', Object.keys(everyColumn))
      for (const [name, args, variables] of [
        ['createStudent', '(input: $student)', { student: { ...everyColumn, sourcedId: `${p}-ec` } }],
        ['upsertStudents', '(items: $items)', { items: [{ ...everyColumn, studentNumber: `${p}-ec-up`, sourcedId: `${p}-ec-up` }] }]
      ] as const) {
        const res = await gql(app, `mutation ${header(variables)} { ${name}${args} { __typename } }`, { token, variables })
        if (!may('roster-core.createput') || unwritten.length > 0) {
          t.same(codes(res), ['FORBIDDEN'], `${name} writing a column outside the scopes is FORBIDDEN`)
        } else {
          t.same(res.body.errors, undefined, `${name} writing every column: answered`)
        }
      }
      if (!may('roster-core.createput') || unwritten.length > 0) {
        t.equal(await exists(`${p}-ec`) || await exists(`${p}-ec-up`), false, 'and nothing was written')
      }
    })
  }
})
