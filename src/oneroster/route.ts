// What every route module of the binding (plugin.ts, classes.ts, enrollments.ts, demographics.ts)
// is given: the caller plugin.ts makes of a request, the handler a route is, and its path's parameters.
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { SchoolDb } from '../db/school-client.js'
import type { AnswerContext } from './kinds.js'

/** The caller of a route: its school client and what its answers' references need. */
export interface Caller {
  readonly db: SchoolDb
  readonly schoolId: string
  readonly context: AnswerContext
}

/** A route's handler, given its caller. */
export type Handler = (request: FastifyRequest, reply: FastifyReply, caller: Caller) => Promise<unknown>

/** A route's path parameters. */
export type Params = Readonly<Record<string, string>>
