// `school-data import oneroster PATH --school ID`: read the bundle, check all of it against itself
// and the school's records, then write everything in one transaction (or nothing).
import cliProgress from 'cli-progress'
import { readBundle, type Bundle } from './bundle.js'
import { inSchoolTransaction, type ConnectionOptions } from './connection.js'
import { planCalendar, type CalendarPlan } from './calendar.js'
import { bundleHolds, planImport, resolveClassReferences, type PlanOptions, type Removals } from './oneroster.js'
import { readExisting, rowsToWrite, writePlan, type Sql, type WriteSummary } from './write.js'
import { calendarRowsToWrite, readExistingCalendar, writeCalendar, type CalendarSummary } from './write-calendar.js'
import { parseUuid } from '../validators.js'

export { ImportError } from './bundle.js'
export { SchoolNotFoundError } from './connection.js'

export interface ImportOptions extends ConnectionOptions {
  path: string
  schoolId: string
  /** The bundle's org that is the school (its sourcedId): roles.csv's rows of other orgs are not the school's roles. */
  org?: string | undefined
  /** Check and write, then roll back: the summary of what an import would do, and what it would remove. */
  dryRun?: boolean
  /** Where the progress bar goes; shown only on a terminal. */
  progress?: NodeJS.WritableStream & { isTTY?: boolean }
}

export interface ImportSummary extends WriteSummary, CalendarSummary {
  skippedUsers: number
  skippedEnrollments: number
  dryRun: boolean
  /** A dry run's list of what the import would remove (a real import counts them only). */
  removals?: Removals & CalendarPlan['removed']
}

export async function importOneRoster (options: ImportOptions): Promise<ImportSummary> {
  const schoolId = parseUuid(options.schoolId)
  if (schoolId === undefined) throw new Error(`School id "${options.schoolId}" is not a UUID`)
  const bar = options.progress?.isTTY === true
    ? new cliProgress.SingleBar({
      stream: options.progress,
      format: '{phase} [{bar}] {percentage}% | {value}/{total} rows',
      hideCursor: true,
      clearOnComplete: true
    }, cliProgress.Presets.shades_classic)
    : undefined
  try {
    bar?.start(1, 0, { phase: 'Reading and checking' })
    const bundle = await readBundle(options.path)
    return await inSchoolTransaction(options, schoolId, async (sql) => {
      const { summary, removals } = await importBundle(sql, schoolId, bundle, { org: options.org }, {
        planned: (rows) => {
          bar?.setTotal(rows)
          bar?.update(0, { phase: 'Writing' })
        },
        progress: (n) => bar?.increment(n)
      })
      bar?.update({ phase: 'Committing' })
      return { ...summary, dryRun: options.dryRun === true, ...(options.dryRun === true ? { removals } : {}) }
    }, options.dryRun === true)
  } finally {
    bar?.stop()
  }
}

/**
 * Plans the whole bundle against the school's records and writes it, on the import's connection
 * (in its school transaction): the calendar (courses, sessions) first, then the people, classes
 * and enrollments. Shared by the CLI and the tests that import an export.
 */
export async function importBundle (sql: Sql, schoolId: string, bundle: Bundle, options: PlanOptions,
  report: { planned?: (rows: number) => void, progress?: (n: number) => void } = {}
): Promise<{ summary: Omit<ImportSummary, 'dryRun' | 'removals'>, removals: Removals & CalendarPlan['removed'] }> {
  const plan = planImport(bundle, await readExisting(sql), options)
  const existingCalendar = await readExistingCalendar(sql)
  const calendar = planCalendar(bundle, existingCalendar)
  resolveClassReferences(plan, keptKeys(existingCalendar.courses, calendar.courses, calendar.removed.courses),
    keptKeys(existingCalendar.academicSessions, calendar.academicSessions, calendar.removed.academicSessions),
    { courses: bundleHolds(bundle, 'courses.csv'), terms: bundleHolds(bundle, 'academicSessions.csv') })
  report.planned?.(rowsToWrite(plan) + calendarRowsToWrite(calendar))
  const progress = report.progress ?? (() => {})
  // Courses and sessions first: removing a classroom or a person never depends on them.
  const calendarWritten = await writeCalendar(sql, schoolId, calendar, progress)
  const written = await writePlan(sql, schoolId, plan, progress)
  return {
    summary: { ...written, ...calendarWritten, skippedUsers: plan.skippedUsers, skippedEnrollments: plan.skippedEnrollments },
    removals: { ...plan.removed, ...calendar.removed }
  }
}

/** The sourcedIds of the records an import keeps (the school's not removed, and the bundle's), to their ids. */
function keptKeys (existing: ReadonlyArray<{ id: string, sourcedId: string | null }>, planned: ReadonlyArray<{ id: string, sourcedId: string }>, removed: ReadonlyArray<{ id: string }>): Map<string, string> {
  const gone = new Set(removed.map((r) => r.id))
  const keys = new Map(existing.filter((r) => !gone.has(r.id)).map((r) => [r.sourcedId ?? r.id, r.id]))
  for (const r of planned) keys.set(r.sourcedId, r.id)
  return keys
}

/** At most this many lines per kind of removal in a dry run's text (`--json` lists them all). */
const REMOVALS_SHOWN = 50

/** The summary as lines for a person (the CLI's standard output). */
export function formatSummary (summary: ImportSummary): string {
  const rows: Array<[string, 'academicSessions' | 'courses' | 'classrooms' | 'teachers' | 'students' | 'agents' | 'teacherAssignments']> = [
    ['academic sessions', 'academicSessions'],
    ['courses', 'courses'],
    ['classrooms', 'classrooms'],
    ['teachers', 'teachers'],
    ['students', 'students'],
    ['agents', 'agents'],
    ['teacher assignments', 'teacherAssignments']
  ]
  const lines = [summary.dryRun ? 'Dry run: nothing was written. The import would give:' : 'Imported:']
  for (const [label, key] of rows) {
    const c = summary[key]
    lines.push(`  ${label.padEnd(20)} ${String(c.created).padStart(7)} created ${String(c.updated).padStart(7)} updated ${String(c.unchanged).padStart(7)} unchanged ${String(c.removed).padStart(7)} removed`)
  }
  lines.push(`  ${'student enrollments'.padEnd(20)} ${String(summary.studentEnrollmentsEnded).padStart(7)} ended (the students stay, in no classroom)`)
  if (summary.skippedUsers > 0 || summary.skippedEnrollments > 0) {
    lines.push(`  skipped: ${summary.skippedUsers} users of other roles, ${summary.skippedEnrollments} of their enrollments (or of other roles)`)
  }
  const removals = summary.removals
  if (removals !== undefined) {
    const kinds: Array<[string, string[]]> = [
      ['academic sessions', removals.academicSessions.map((s) => `academic session ${s.sourcedId}`)],
      ['courses', removals.courses.map((c) => `course ${c.sourcedId}`)],
      ['classrooms', removals.classrooms.map((c) => `classroom ${c.sourcedId} ${JSON.stringify(c.name)}`)],
      ['teachers', removals.teachers.map((s) => `teacher ${s.sourcedId}`)],
      ['students', removals.students.map((s) => `student ${s.sourcedId}`)],
      ['agents', removals.agents.map((s) => `agent ${s.sourcedId}`)],
      ['teacher assignments', removals.assignments.map((a) => `teacher ${a.teacher} from classroom ${JSON.stringify(a.classroom)}`)],
      ['student enrollments', removals.enrollments.map((e) => `student ${e.student} from classroom ${JSON.stringify(e.classroom)}`)]
    ]
    if (kinds.some(([, list]) => list.length > 0)) lines.push('Would remove:')
    for (const [kind, list] of kinds) {
      for (const line of list.slice(0, REMOVALS_SHOWN)) lines.push(`  ${line}`)
      if (list.length > REMOVALS_SHOWN) lines.push(`  ... and ${list.length - REMOVALS_SHOWN} more ${kind} (--json lists them all)`)
    }
  }
  return lines.join('\n') + '\n'
}
