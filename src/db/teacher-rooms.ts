// A teacher's classrooms, kept on each node for wall 1's reach step (reach.ts). With them, a
// teacher's reads are confined by `classroom_id IN (<the classrooms>)`, which PostgreSQL reads from
// the classroom index alone, instead of by the relation filter `classroom: { teachers: { some:
// { teacherId } } }`, which joins every row the statement reads to classrooms and to
// teacher_classrooms (BENCHMARKS.md, "A teacher's reach by the classrooms each node keeps").
//
// They are kept as the response cache keeps its answers (src/graphql/response-cache.ts):
// - dropped for a school when its data-changed notification arrives (every write to classrooms or
//   teacher_classrooms sends one, on commit), and at once when this node's own school client writes;
// - dropped whole when notifications may have been missed (listening again, connection lost);
// - used only while notifications arrive: otherwise `of` answers null and the reach step filters by
//   relation, as it does for a client without the store (the CLI, a test's own database);
// - a load that began before a school's notification is returned to its caller but not kept.
// So a classroom assigned or unassigned on another node reaches this node's wall 1 when the
// notification does (milliseconds), as a cached answer does; wall 2 reads the assignments in the
// statement itself, so with both walls a teacher never sees a room taken from them.
import { LRUCache } from 'lru-cache'

export interface TeacherRooms {
  /**
   * The classrooms `teacherId` is assigned to in `schoolId`, kept or loaded; null while they are
   * not kept (no notification source is live): the caller then confines by relation.
   */
  of (schoolId: string, teacherId: string): Promise<readonly string[]> | null
  /** The school's data changed: its teachers' classrooms are loaded again. */
  invalidate (schoolId: string): void
  /** Anything may have changed. */
  invalidateAll (): void
  /** Keeps classrooms while `live()` is true; returns the function that stops it. */
  keepWhile (live: () => boolean): () => void
}

/** A store of teachers' classrooms, loaded by `load` (the school's own client, both walls). */
export function teacherRooms (load: (schoolId: string, teacherId: string) => Promise<readonly string[]>): TeacherRooms {
  // By school, so that a school's notification drops its teachers at once. A load in flight when
  // its school is dropped completes into the dropped map only.
  const schools = new LRUCache<string, Map<string, Promise<readonly string[]>>>({ max: 10_000 })
  const sources = new Set<() => boolean>()

  function live (): boolean {
    for (const source of sources) if (source()) return true
    return false
  }

  const store: TeacherRooms = {
    of (schoolId, teacherId) {
      if (!live()) return null
      let teachers = schools.get(schoolId)
      if (teachers === undefined) {
        teachers = new Map()
        schools.set(schoolId, teachers)
      }
      const kept = teachers.get(teacherId)
      if (kept !== undefined) return kept
      const loading = load(schoolId, teacherId)
      teachers.set(teacherId, loading)
      const from = teachers
      loading.catch(() => { if (from.get(teacherId) === loading) from.delete(teacherId) })
      return loading
    },
    invalidate (schoolId) { schools.delete(schoolId) },
    invalidateAll () { schools.clear() },
    keepWhile (source) {
      sources.add(source)
      return () => {
        sources.delete(source)
        schools.clear()
      }
    }
  }
  return store
}
