// The OneRoster binding's test files ask through fastify.inject and check every answer against the
// service's OpenAPI description (validate.ts): one GET that does both, and the refusal check of
// the binding's imsx_StatusInfo.
import type { FastifyInstance } from 'fastify'
import type { Test } from 'tap'
import { validateAnswer } from './validate.js'

export const BASE = '/ims/oneroster/rostering/v1p2'

export interface Answer { statusCode: number, headers: Record<string, unknown>, body: any }

export interface CheckedAnswers {
  /** GET `BASE + path`, with the token when given; the answer is validated (unless `unchecked` says not). */
  readonly get: (app: FastifyInstance, path: string, token?: string) => Promise<Answer>
  /** Every answer that did not validate against the description, with why. */
  readonly invalid: string[]
  /** How many answers were asked for. */
  readonly count: () => number
}

/** A file's checked GET; `unchecked`: paths whose answers are not validated (a route the service does not serve yet). */
export function checkedAnswers (unchecked: (path: string) => boolean = () => false): CheckedAnswers {
  const invalid: string[] = []
  let count = 0
  return {
    invalid,
    count: () => count,
    async get (app, path, token) {
      const res = await app.inject({ method: 'GET', url: BASE + path, headers: token === undefined ? {} : { authorization: `Bearer ${token}` } })
      const answer = { statusCode: res.statusCode, headers: res.headers, body: res.json() }
      count += 1
      if (!unchecked(path)) {
        const problems = validateAnswer({ method: 'GET', path: BASE + path, status: res.statusCode, headers: res.headers, body: answer.body })
        if (problems.length > 0) invalid.push(`GET ${path} ${res.statusCode}: ${problems.join('; ')}`)
      }
      return answer
    }
  }
}

/** The answer is a refusal with `status` and the binding's imsx_StatusInfo naming `codeMinor`. */
export function refused (t: Test, res: Answer, status: number, codeMinor: string, what: string): void {
  t.equal(res.statusCode, status, `${what}: ${status}`)
  t.match(res.body, {
    imsx_codeMajor: 'failure',
    imsx_severity: 'error',
    imsx_description: String,
    imsx_CodeMinor: { imsx_codeMinorField: [{ imsx_codeMinorFieldName: 'TargetEndSystem', imsx_codeMinorFieldValue: codeMinor }] }
  }, `${what}: imsx_StatusInfo with ${codeMinor}`)
}

/** An endpoint: its path, its envelope, and whether 1EdTech's security asks roster.readonly (not roster-core.readonly). */
export type Endpoint = [path: string, envelope: string, roster: boolean]

/**
 * Each endpoint answers an administrator, a teacher and a roster.readonly client in its envelope,
 * a collection with X-Total-Count and Link; a roster-core.readonly client is refused (403) where
 * the endpoint asks roster.readonly.
 */
export async function answeredByScope (
  t: Test,
  answers: CheckedAnswers,
  app: FastifyInstance,
  endpoints: readonly Endpoint[],
  tokens: { admin: string, teacher: string, core: string, full: string }
): Promise<void> {
  for (const [caller, token] of [['administrator', tokens.admin], ['teacher', tokens.teacher], ['roster-core.readonly', tokens.core], ['roster.readonly', tokens.full]] as const) {
    for (const [path, envelope, roster] of endpoints) {
      const res = await answers.get(app, path, token)
      if (roster && caller === 'roster-core.readonly') {
        refused(t, res, 403, 'forbidden', `${caller}: ${path} needs roster.readonly`)
        continue
      }
      t.equal(res.statusCode, 200, `${caller}: ${path}`)
      t.same(Object.keys(res.body), [envelope], `${caller}: ${path} in {"${envelope}": ...}`)
      if (Array.isArray(res.body[envelope])) {
        t.ok(res.body[envelope].length > 0 && res.headers['x-total-count'] === String(res.body[envelope].length), `${caller}: ${path}: X-Total-Count`)
        t.match(String(res.headers.link), /rel="first".*rel="last"/, `${caller}: ${path}: Link`)
      }
    }
  }
}
