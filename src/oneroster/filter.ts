// OneRoster's filter grammar (the `filter` parameter of every collection): comparisons
// `field<op>'value'` with the operators = != > >= < <= and ~ (contains), joined by AND and OR
// (AND binding tighter; the binding has no parentheses), the value in single quotes (a quote in it
// doubled: 'O''Brien'), a field by its name or a dotted path (roles.role). Parsed here into a
// predicate over the binding's field names; each kind (kinds.ts) turns its fields into columns.
import type { Comparison, Predicate } from '../db/typed-reads.js'
import { OneRosterError } from './status-info.js'

const COMPARISON = /\s*([A-Za-z][A-Za-z0-9]*(?:\.[A-Za-z][A-Za-z0-9]*)*)\s*(!=|>=|<=|=|>|<|~)\s*'((?:[^']|'')*)'\s*/y
const JOIN = /(AND|OR)(?=\s)/y
const MAX_LENGTH = 2000
const MAX_COMPARISONS = 20

const invalid = (message: string): OneRosterError => new OneRosterError('invalid_filter_field', `filter: ${message}`)

/** The filter's predicate over binding field names; throws invalid_filter_field for one that does not parse. */
export function parseFilter (text: string): Predicate {
  if (text.length > MAX_LENGTH) throw invalid(`at most ${MAX_LENGTH} characters`)
  const any: Predicate[][] = [[]]
  let at = 0
  for (;;) {
    COMPARISON.lastIndex = at
    const match = COMPARISON.exec(text)
    if (match === null) throw invalid(`expected field<op>'value' at character ${at + 1} (operators: = != > >= < <= ~; values in single quotes)`)
    any[any.length - 1]!.push({ kind: 'compare', field: match[1]!, op: match[2] as Comparison, value: match[3]!.replaceAll("''", "'") })
    at = COMPARISON.lastIndex
    if (at === text.length) break
    JOIN.lastIndex = at
    const join = JOIN.exec(text)
    if (join === null) throw invalid(`expected AND or OR at character ${at + 1}`)
    if (join[1] === 'OR') any.push([])
    at = JOIN.lastIndex
  }
  if (any.flat().length > MAX_COMPARISONS) throw invalid(`at most ${MAX_COMPARISONS} comparisons`)
  const all = any.map((parts): Predicate => parts.length === 1 ? parts[0]! : { kind: 'all', parts })
  return all.length === 1 ? all[0]! : { kind: 'any', parts: all }
}

/** The comparison of two values of the same kind (texts, or dates as their times), as the database makes it. */
export function compareValues (left: string | number, op: Comparison, right: string | number): boolean {
  if (op === '~') return String(left).toLowerCase().includes(String(right).toLowerCase())
  switch (op) {
    case '=': return left === right
    case '!=': return left !== right
    case '>': return left > right
    case '>=': return left >= right
    case '<': return left < right
    case '<=': return left <= right
  }
}

/** Each comparison of `predicate` replaced by what `map` makes of it. */
export function mapComparisons (predicate: Predicate, map: (comparison: Extract<Predicate, { kind: 'compare' }>) => Predicate): Predicate {
  switch (predicate.kind) {
    case 'compare': return map(predicate)
    case 'constant': return predicate
    default: return { kind: predicate.kind, parts: predicate.parts.map((part) => mapComparisons(part, map)) }
  }
}

/** A predicate with its constants folded: true when it always holds, false when it never does. */
export function simplify (predicate: Predicate): Predicate | boolean {
  switch (predicate.kind) {
    case 'constant': return predicate.value
    case 'compare': return predicate
    default: {
      const parts: Predicate[] = []
      for (const part of predicate.parts) {
        const folded = simplify(part)
        if (folded === true) {
          if (predicate.kind === 'any') return true
        } else if (folded === false) {
          if (predicate.kind === 'all') return false
        } else {
          parts.push(folded)
        }
      }
      if (parts.length === 0) return predicate.kind === 'all'
      return parts.length === 1 ? parts[0]! : { kind: predicate.kind, parts }
    }
  }
}
