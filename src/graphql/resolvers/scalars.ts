// Date (RFC 3339 full-date) and DateTime (RFC 3339 date-time): how values are read and written.
// Their name, description and @specifiedBy are the SDL's (schema/common.graphql), one definition:
// implementScalar builds the implementation from the SDL's own scalar, because Mercurius sets every
// property of a scalar resolver on the served type, an absent description included.
// Dates are stored as PostgreSQL `date`, which Prisma reads as midnight UTC: the UTC calendar day
// is the stored day.
import {
  GraphQLError,
  GraphQLScalarType,
  isScalarType,
  Kind,
  type GraphQLScalarTypeConfig,
  type GraphQLSchema
} from 'graphql'

/** The functions of a scalar implementation: everything the SDL cannot say. */
export type ScalarCoercion = Required<Pick<GraphQLScalarTypeConfig<Date, string>, 'serialize' | 'parseValue' | 'parseLiteral'>>

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** A YYYY-MM-DD text as the Date Prisma writes to a `date` column; null when not a real day. */
export function parseDay (text: string): Date | null {
  const match = DAY.exec(text)
  if (match === null) return null
  const date = new Date(`${text}T00:00:00.000Z`)
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text ? null : date
}

// The date-time of https://scalars.graphql.org/andimarek/date-time.html: RFC 3339 with exactly
// three fraction digits and a numeric offset or Z (not -00:00); `t` and `z` may be lower case.
const INSTANT = /^(\d{4}-\d{2}-\d{2})[Tt]([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/

/** An RFC 3339 date-time text as a Date; null when not one (or not a real day). */
export function parseInstant (text: string): Date | null {
  const match = INSTANT.exec(text)
  if (match === null || parseDay(match[1]!) === null || text.endsWith('-00:00')) return null
  const date = new Date(text.toUpperCase())
  return Number.isNaN(date.getTime()) ? null : date
}

function asDate (value: unknown, kind: string): Date {
  const date = value instanceof Date ? value : new Date(value as string)
  if (Number.isNaN(date.getTime())) throw new GraphQLError(`${kind} cannot represent ${String(value)}`)
  return date
}

export const dateCoercion: ScalarCoercion = {
  serialize: (value) => asDate(value, 'Date').toISOString().slice(0, 10),
  parseValue (value) {
    const date = typeof value === 'string' ? parseDay(value) : null
    if (date === null) throw new GraphQLError(`Date must be a YYYY-MM-DD day (got ${JSON.stringify(value)})`)
    return date
  },
  parseLiteral (ast) {
    const date = ast.kind === Kind.STRING ? parseDay(ast.value) : null
    if (date === null) throw new GraphQLError('Date must be a YYYY-MM-DD day', { nodes: ast })
    return date
  }
}

const DATE_TIME_FORMAT = 'an RFC 3339 date-time with milliseconds, e.g. 2026-11-23T13:15:02.123Z'

export const dateTimeCoercion: ScalarCoercion = {
  serialize: (value) => asDate(value, 'DateTime').toISOString(),
  parseValue (value) {
    const date = typeof value === 'string' ? parseInstant(value) : null
    if (date === null) throw new GraphQLError(`DateTime must be ${DATE_TIME_FORMAT} (got ${JSON.stringify(value)})`)
    return date
  },
  parseLiteral (ast) {
    const date = ast.kind === Kind.STRING ? parseInstant(ast.value) : null
    if (date === null) throw new GraphQLError(`DateTime must be ${DATE_TIME_FORMAT}`, { nodes: ast })
    return date
  }
}

/** The SDL's scalar `name` (description, @specifiedBy, AST node) with the functions of `coercion`. */
export function implementScalar (schema: GraphQLSchema, name: string, coercion: ScalarCoercion): GraphQLScalarType<Date, string> {
  const type = schema.getType(name)
  if (!isScalarType(type)) throw new Error(`schema/*.graphql declares no scalar ${name}`)
  return new GraphQLScalarType<Date, string>({ ...type.toConfig(), ...coercion })
}
