// Date (YYYY-MM-DD) and DateTime (ISO 8601 in UTC). Dates are stored as PostgreSQL `date`, which
// Prisma reads as midnight UTC: the UTC calendar day is the stored day.
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql'

const DAY = /^(\d{4})-(\d{2})-(\d{2})$/

/** A YYYY-MM-DD text as the Date Prisma writes to a `date` column; null when not a real day. */
export function parseDay (text: string): Date | null {
  const match = DAY.exec(text)
  if (match === null) return null
  const date = new Date(`${text}T00:00:00.000Z`)
  return Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== text ? null : date
}

function asDate (value: unknown, kind: string): Date {
  const date = value instanceof Date ? value : new Date(value as string)
  if (Number.isNaN(date.getTime())) throw new GraphQLError(`${kind} cannot represent ${String(value)}`)
  return date
}

export const DateScalar = new GraphQLScalarType<Date, string>({
  name: 'Date',
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
})

export const DateTimeScalar = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize: (value) => asDate(value, 'DateTime').toISOString(),
  parseValue: (value) => asDate(value, 'DateTime'),
  parseLiteral (ast) {
    if (ast.kind !== Kind.STRING) throw new GraphQLError('DateTime must be an ISO 8601 string', { nodes: ast })
    return asDate(ast.value, 'DateTime')
  }
})
