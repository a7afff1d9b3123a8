// A collection answered from several lists (students and teachers for /users, students' and
// teachers' enrollments, the users deleted since a delta's bound): each list holds the first
// offset + limit records of its table in the order asked, as the database orders that table; they
// are merged here by the same order and the page is the merge's slice. Each list's prefix decides
// the merge's prefix, so pages never overlap or skip.

type Row = Record<string, unknown>

/** A row of a merge: its sort value (null without one, or for a kind ordered by id alone) and id. */
export interface Sorted { readonly value: string | number | null, readonly id: string, readonly row: Row }

/** A column's value as the driver hands it over (text, an enum's name read as text, or a date), as the merge compares it. */
export function sortValue (value: unknown): string | number | null {
  return value === null || value === undefined ? null : value instanceof Date ? value.getTime() : typeof value === 'string' ? value : JSON.stringify(value)
}

/** The order of two rows as the database orders each table: ascending, nulls last, then by id; a descending order is its reverse. */
export function compareSorted (a: Sorted, b: Sorted, descending: boolean): number {
  let ascending = 0
  if (a.value !== b.value) ascending = a.value === null ? 1 : b.value === null ? -1 : a.value < b.value ? -1 : 1
  else if (a.id !== b.id) ascending = a.id < b.id ? -1 : 1
  return descending ? -ascending : ascending
}

/** The page (`limit` rows after `offset`) of the lists merged in order, each row with the index of its list. */
export function mergedPage (lists: ReadonlyArray<readonly Sorted[]>, offset: number, limit: number, descending: boolean): Array<{ list: number, row: Row }> {
  const at = lists.map(() => 0)
  const page: Array<{ list: number, row: Row }> = []
  for (let n = 0; n < offset + limit; n++) {
    let best = -1
    for (let i = 0; i < lists.length; i++) {
      const next = lists[i]![at[i]!]
      if (next !== undefined && (best === -1 || compareSorted(next, lists[best]![at[best]!]!, descending) < 0)) best = i
    }
    if (best === -1) break
    const { row } = lists[best]![at[best]!++]!
    if (n >= offset) page.push({ list: best, row })
  }
  return page
}
