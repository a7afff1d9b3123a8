// Coded errors, the bodies of every refusal of the GraphQL endpoint, and the one formatter that
// decides what a client sees. Every `extensions.code` the service sends is a member of ErrorCode.
import { GraphQLError, type ExecutionResult, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql'
import mercurius, { type MercuriusContext } from 'mercurius'
import { documentErrorStatus, SUBSCRIPTIONS_PATH } from './http.js'
import { QUERY_LIMIT_EXCEEDED, tokenLimitError } from './limits.js'
import type { AdminError, AdminErrorCode, InvalidField } from '../records/errors.js'
import { DATABASE_RETRY_AFTER, DATABASE_UNAVAILABLE_MESSAGE, databaseUnavailable } from '../db/unavailable.js'
import type { OutOfScopeField } from './scope-check.js'

const { ErrorWithProps } = mercurius
type CodedError = InstanceType<typeof ErrorWithProps>

export type ErrorCode =
  // Field errors of an executed operation.
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'INVALID_CREDENTIALS'
  | 'INVALID_REFRESH_TOKEN'
  | 'BAD_USER_INPUT'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL_SERVER_ERROR'
  // Record mutations (docs/api/mutations.md): the record or link is not there (another school's
  // neither); a natural key taken or a record still in use; the record moved on from the version
  // given (extensions.currentVersion); an idempotency key used with another request, or still running.
  | AdminErrorCode
  | 'IDEMPOTENCY_KEY_REUSED'
  | 'IDEMPOTENCY_KEY_IN_USE'
  // Refusals of a request before execution (HTTP 4xx or 503); a query limit's is limits.ts's.
  | typeof QUERY_LIMIT_EXCEEDED
  | 'BAD_REQUEST'
  | 'METHOD_NOT_ALLOWED'
  | 'PAYLOAD_TOO_LARGE'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'TIMEOUT'
  | 'SERVICE_UNAVAILABLE'
  // Persisted queries and trusted documents (persisted-documents.ts); the first two are Apollo's.
  | 'PERSISTED_QUERY_NOT_FOUND'
  | 'PERSISTED_QUERY_NOT_SUPPORTED'
  | 'PERSISTED_QUERY_HASH_MISMATCH'
  | 'TRUSTED_DOCUMENT_REQUIRED'

export function codedError (code: ErrorCode, message: string): Error {
  return new ErrorWithProps(message, { code })
}

export const unauthenticated = (): Error =>
  codedError('UNAUTHENTICATED', 'Authentication required: send a valid access token as "Authorization: Bearer <ACCESS_TOKEN>"')
export const forbidden = (): Error =>
  codedError('FORBIDDEN', 'Your account is not assigned to a school')

const NEEDS: Readonly<Record<OutOfScopeField['needs'], string>> = {
  'roster-core.readonly': 'the scope roster-core.readonly (or roster.readonly)',
  'roster.readonly': 'the scope roster.readonly',
  'roster-demographics.readonly': 'the scope roster-demographics.readonly',
  'roster-core.createput': 'the scope roster-core.createput (or roster.createput)',
  'roster.createput': 'the scope roster.createput',
  'roster.delete': 'the scope roster.delete',
  user: 'a user (clients may not)',
  none: 'nothing',
  unassigned: 'a scope nobody holds (the field is missing from the scope table)',
  school: 'a caller who reads the whole school (a teacher reads no contact)'
}

/**
 * An operation that selects fields outside the caller's scopes (scope-check.ts), refused before it
 * runs: each field as `Type.field` with what it needs, in the message and in `extensions.fields`.
 */
export function outOfScope (fields: readonly OutOfScopeField[]): Error {
  const list = fields.map(({ field, needs }) => `${field} needs ${NEEDS[needs]}`).join('; ')
  return new ErrorWithProps(`Not allowed for this access token: ${list}`, { code: 'FORBIDDEN' satisfies ErrorCode, fields })
}
/** A subscription sent over HTTP: the endpoint serves them over WebSocket only (src/plugins/subscriptions.ts). */
export const subscriptionsOverWebSocket = (): Error =>
  codedError('BAD_REQUEST', `Subscriptions are served over WebSocket at ${SUBSCRIPTIONS_PATH} (protocol graphql-transport-ws), not over HTTP`)

export const invalidCredentials = (): Error => codedError('INVALID_CREDENTIALS', 'Invalid credentials')
export const invalidRefreshToken = (): Error =>
  codedError('INVALID_REFRESH_TOKEN', 'Invalid or expired refresh token')
export const badUserInput = (message: string): Error => codedError('BAD_USER_INPUT', message)

/**
 * A refusal of a record write or of the administration code (AdminError, src/records/errors.ts) as
 * the client sees it: its code, and for invalid input every field with its path
 * (`extensions.invalid`), for a version conflict the record's version now
 * (`extensions.currentVersion`).
 */
export function adminRefusal (error: AdminError): Error {
  const { invalid, currentVersion } = error.details
  return new ErrorWithProps(error.message, {
    code: error.code satisfies ErrorCode,
    ...(invalid === undefined ? {} : { invalid }),
    ...(currentVersion === undefined ? {} : { currentVersion })
  })
}

/**
 * Invalid arguments found before a resolver runs, refused as the administration code refuses a
 * write's invalid fields (adminRefusal): BAD_USER_INPUT, every field in `extensions.invalid`. Each
 * message names its field, so several are joined as they are.
 */
export function invalidInput (invalid: readonly [InvalidField, ...InvalidField[]]): Error {
  const message = invalid.length === 1
    ? invalid[0].message
    : `${invalid.length} invalid fields: ${invalid.map((field) => field.message).join('; ')}`
  return new ErrorWithProps(message, { code: 'BAD_USER_INPUT' satisfies ErrorCode, invalid })
}

/** A write that needs scopes the caller lacks: each column with the scope, as `outOfScope` names fields. */
export function cannotWrite (columns: ReadonlyArray<{ field: string, needs: string }>): Error {
  const list = columns.map(({ field, needs }) => `${field} needs the scope ${needs}`).join('; ')
  return new ErrorWithProps(`Not allowed for this access token: writing ${list}`, { code: 'FORBIDDEN' satisfies ErrorCode, fields: columns })
}
/** Apollo's message and code: its persisted-query link then sends the document with the hash. */
export const persistedQueryNotFound = (): Error =>
  codedError('PERSISTED_QUERY_NOT_FOUND', 'PersistedQueryNotFound')
/** Apollo's message and code: its link stops sending hashes alone. */
export const persistedQueryNotSupported = (): Error =>
  codedError('PERSISTED_QUERY_NOT_SUPPORTED', 'PersistedQueryNotSupported')
export const persistedQueryHashMismatch = (): Error =>
  codedError('PERSISTED_QUERY_HASH_MISMATCH', 'The persisted query hash is not the SHA-256 hash of the query sent with it')
export const trustedDocumentRequired = (): Error =>
  codedError('TRUSTED_DOCUMENT_REQUIRED', 'Only trusted documents are executed here: send the document\'s hash as "documentId" or as extensions.persistedQuery.sha256Hash, not the query text')
/** A refusal by a limit; a response whose data is null because of it is a 429. */
export const tooManyRequests = (message: string, retryAfter: number): Error =>
  new ErrorWithProps(message, { code: 'TOO_MANY_REQUESTS', retryAfter }, 429)
/** An operation failed because the database is out of reach (src/db/unavailable.ts); no data: a 503. */
const databaseOutOfReach = (): CodedError =>
  new ErrorWithProps(DATABASE_UNAVAILABLE_MESSAGE, { code: 'SERVICE_UNAVAILABLE' satisfies ErrorCode, retryAfter: DATABASE_RETRY_AFTER }, 503)

const INTERNAL_MESSAGE = 'Internal server error'

/** The body of a refusal: a GraphQL response with one coded error and no `data` (nothing ran). */
export interface RefusalBody { errors: [GraphQLFormattedError] }

export function refusal (code: ErrorCode, message: string, extensions: Record<string, unknown> = {}): RefusalBody {
  return { errors: [{ message, extensions: { code, ...extensions } }] }
}

/** The refusals of the endpoint, with the messages the documentation promises (docs/api/errors.md). */
export const refusals = {
  badRequest: (message: string) => refusal('BAD_REQUEST', message),
  missingQuery: () => refusal('BAD_REQUEST', 'Missing query: send a JSON body {"query": "...", "variables": {...}}'),
  methodNotAllowed: () => refusal('METHOD_NOT_ALLOWED', 'Only queries can be sent with GET; send mutations with POST'),
  tooLarge: (bodyLimitBytes: number) => refusal('PAYLOAD_TOO_LARGE', `Request body is too large: at most ${bodyLimitBytes} bytes`),
  unsupportedMediaType: () => refusal('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type: send application/json'),
  rateLimited: (limit: string, max: number, retryAfter: number) => refusal('TOO_MANY_REQUESTS',
    `Too many requests: the ${limit} limit of ${max} requests per minute is reached; retry in ${retryAfter} s`, { limit, retryAfter }),
  timeout: () => refusal('TIMEOUT', 'The request took too long and was stopped; retry later'),
  overloaded: (retryAfter: number) => refusal('SERVICE_UNAVAILABLE', `The service is overloaded; retry in ${retryAfter} seconds`),
  shuttingDown: () => refusal('SERVICE_UNAVAILABLE', 'The server is shutting down: retry the request (another node answers it)')
}

/**
 * Fastify's and Mercurius's refusals of a request (an error with a 4xx status, or the handler
 * timeout), as status and body. Any other 4xx is a BAD_REQUEST with its own message (e.g. a body
 * that is not valid JSON).
 */
function httpRefusal (error: Error & { code?: string, statusCode?: unknown }, bodyLimitBytes: number): { statusCode: number, body: RefusalBody } | undefined {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE': return { statusCode: 413, body: refusals.tooLarge(bodyLimitBytes) }
    // HANDLER_TIMEOUT_MS (plugins/handler-timeout.ts).
    case 'FST_ERR_HANDLER_TIMEOUT': return { statusCode: 503, body: refusals.timeout() }
    case 'MER_ERR_METHOD_NOT_ALLOWED': return { statusCode: 405, body: refusals.methodNotAllowed() }
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': return { statusCode: 415, body: refusals.unsupportedMediaType() }
    case 'MER_ERR_GQL_PERSISTED_QUERY_NOT_FOUND': return { statusCode: 400, body: refusals.missingQuery() }
  }
  // Mercurius's wrapper of the document's errors (syntax, validation, variables): flattened below.
  if (Array.isArray((error as { errors?: unknown }).errors)) return undefined
  const status = error.statusCode
  if (typeof status === 'number' && status >= 400 && status < 500) return { statusCode: status, body: refusals.badRequest(error.message) }
  return undefined
}

function flatten (errors: readonly GraphQLError[]): GraphQLError[] {
  // Mercurius wraps validation errors in one error that holds them in `errors`.
  return errors.flatMap((error) => {
    const inner = (error.originalError as { errors?: unknown } | undefined)?.errors
    return Array.isArray(inner) ? (inner as GraphQLError[]) : [error]
  })
}

/** Removes graphql-js's "Did you mean ...?" hints, which tell a prober the schema's names. */
function withoutSuggestions (error: GraphQLFormattedError): GraphQLFormattedError {
  const message = error.message.replace(/ ?Did you mean .*\?$/s, '')
  return message === error.message ? error : { ...error, message }
}

export interface ErrorFormatterOptions {
  /** No field suggestions (production). */
  production: boolean
  /** BODY_LIMIT_BYTES, named in the 413 message. */
  bodyLimitBytes: number
}

type Formatter = (
  execution: ExecutionResult & Required<Pick<ExecutionResult, 'errors'>>,
  context: MercuriusContext
) => { statusCode: number, response: FormattedExecutionResult }

/**
 * Mercurius's errorFormatter. Refusals of the request (above) answer with their own status and
 * code; coded errors pass as they are; errors of the GraphQL language (syntax, validation, variable
 * coercion) keep message and locations; a failure because the database is out of reach
 * (src/db/unavailable.ts) is SERVICE_UNAVAILABLE with retryAfter; anything else is logged with the
 * request id and shown as a generic error, so no stack, SQL or internal detail reaches a client.
 *
 * GraphQL over HTTP: a request that never reached execution has no `data`, and its status follows
 * the negotiated media type (http.ts); an executed one has `data` and is a 200 (a 429 or 503 when a
 * refused field, a locked `login` or the database out of reach, left no data). Every answer holding
 * an error with `extensions.retryAfter` carries it as `Retry-After` too (the longest, if several),
 * whatever path refused.
 */
export function createErrorFormatter ({ production, bodyLimitBytes }: ErrorFormatterOptions): Formatter {
  return (execution, context) => {
    const reply = context.reply as MercuriusContext['reply'] | undefined
    const log = reply?.log ?? context.app.log
    const request = reply?.request
    for (const error of execution.errors) {
      const original = error.originalError
      if (original === undefined || original === null || original instanceof GraphQLError || original instanceof ErrorWithProps) continue
      const refused = httpRefusal(original, bodyLimitBytes)
      if (refused === undefined) continue
      if (refused.statusCode === 405) reply?.header('allow', 'POST')
      if (request !== undefined) request.graphqlOutcome = 'rejected'
      return { statusCode: refused.statusCode, response: refused.body }
    }

    let refusedStatus: number | undefined
    let retryAfter: number | undefined
    // A coded error's part in the answer: its status (when it leaves no data) and seconds to wait.
    const noted = (error: CodedError): Record<string, unknown> => {
      const extensions = error.extensions as Record<string, unknown>
      if (error.statusCode === 429 || error.statusCode === 503) refusedStatus = Math.max(refusedStatus ?? 0, error.statusCode)
      if (typeof extensions.retryAfter === 'number') retryAfter = Math.max(retryAfter ?? 0, extensions.retryAfter)
      return extensions
    }
    const errors = flatten(execution.errors).map((error): GraphQLFormattedError => {
      const original = error.originalError
      if (original === undefined || original === null || original instanceof GraphQLError) {
        const { message, locations, path, extensions } = error
        // Only refusals by a query limit (limits.ts) carry a code among the language's errors.
        const code = extensions?.code === QUERY_LIMIT_EXCEEDED && { extensions }
        const formatted = { message, ...(locations && { locations }), ...(path && { path }), ...code }
        const limited = tokenLimitError(formatted) ?? formatted
        return production ? withoutSuggestions(limited) : limited
      }
      if (original instanceof ErrorWithProps) {
        log.debug({ code: noted(original).code, path: error.path }, original.message)
        return error.toJSON()
      }
      if (databaseUnavailable(original)) {
        // The detail for the operator; for the client, when to retry and the request id.
        log.error({ err: original, path: error.path }, 'the database is out of reach in a GraphQL operation')
        const outage = databaseOutOfReach()
        return {
          message: outage.message,
          ...(error.locations && { locations: error.locations }),
          ...(error.path && { path: error.path }),
          extensions: { ...noted(outage), requestId: request?.id }
        }
      }
      log.error({ err: original, path: error.path }, 'unexpected error in a GraphQL operation')
      return {
        message: INTERNAL_MESSAGE,
        ...(error.locations && { locations: error.locations }),
        ...(error.path && { path: error.path }),
        extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: request?.id }
      }
    })
    if (retryAfter !== undefined) reply?.header('retry-after', String(retryAfter))
    const executed = (execution.data !== undefined && execution.data !== null) || errors.some((e) => e.path !== undefined)
    if (!executed) {
      // A request error (syntax, validation, variables, a query limit): nothing ran, no `data`.
      if (request !== undefined) request.graphqlOutcome = 'rejected'
      return { statusCode: documentErrorStatus(request), response: { errors } }
    }
    return {
      statusCode: refusedStatus !== undefined && execution.data == null ? refusedStatus : 200,
      response: { data: execution.data ?? null, errors }
    }
  }
}
