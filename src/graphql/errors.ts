// Coded errors and the one formatter that decides what a client sees.
import { GraphQLError, type ExecutionResult, type FormattedExecutionResult, type GraphQLFormattedError } from 'graphql'
import mercurius, { type MercuriusContext } from 'mercurius'
import { QUERY_LIMIT_EXCEEDED } from './limits.js'

const { ErrorWithProps } = mercurius

export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'INVALID_CREDENTIALS'
  | 'INVALID_REFRESH_TOKEN'
  | 'BAD_USER_INPUT'
  | 'TOO_MANY_REQUESTS'
  | 'INTERNAL_SERVER_ERROR'
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
export const invalidCredentials = (): Error => codedError('INVALID_CREDENTIALS', 'Invalid credentials')
export const invalidRefreshToken = (): Error =>
  codedError('INVALID_REFRESH_TOKEN', 'Invalid or expired refresh token')
export const badUserInput = (message: string): Error => codedError('BAD_USER_INPUT', message)
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

const INTERNAL_MESSAGE = 'Internal server error'

/** Fastify's and Mercurius's messages for a malformed request, made to say what to send. */
function requestMessage (error: Error & { code?: string }): string {
  switch (error.code) {
    case 'MER_ERR_GQL_PERSISTED_QUERY_NOT_FOUND':
      return 'Missing query: send a JSON body {"query": "...", "variables": {...}}'
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'Unsupported Content-Type: send application/json'
    default:
      return error.message
  }
}

function flatten (errors: readonly GraphQLError[]): GraphQLError[] {
  // Mercurius wraps validation errors in one error that holds them in `errors`.
  return errors.flatMap((error) => {
    const inner = (error.originalError as { errors?: unknown } | undefined)?.errors
    return Array.isArray(inner) ? (inner as GraphQLError[]) : [error]
  })
}

/**
 * Coded errors pass as they are; errors of the GraphQL language (syntax, validation, variable
 * coercion) keep message and locations; anything else is logged with the request id and shown as
 * a generic error, so no stack, SQL or internal detail reaches a client.
 */
export function errorFormatter (
  execution: ExecutionResult & Required<Pick<ExecutionResult, 'errors'>>,
  context: MercuriusContext
): { statusCode: number, response: FormattedExecutionResult } {
  const log = context.reply?.log ?? context.app.log
  const requestId = context.reply?.request.id
  let requestStatus: number | undefined
  let refusedStatus: number | undefined
  const errors = flatten(execution.errors).map((error): GraphQLFormattedError => {
    const original = error.originalError
    if (original === undefined || original === null || original instanceof GraphQLError) {
      const { message, locations, path, extensions } = error
      // Only refusals by a query limit (limits.ts) carry a code among the language's errors.
      const code = extensions?.code === QUERY_LIMIT_EXCEEDED && { extensions }
      return { message, ...(locations && { locations }), ...(path && { path }), ...code }
    }
    if (original instanceof ErrorWithProps) {
      if (original.statusCode === 429) refusedStatus = 429
      log.debug({ code: (original.extensions as { code?: string }).code, path: error.path }, original.message)
      return error.toJSON()
    }
    const status = (original as { statusCode?: unknown }).statusCode
    if (typeof status === 'number' && status >= 400 && status < 500) {
      // An HTTP-level refusal by Fastify or Mercurius (body not JSON, no query, too large).
      requestStatus = status
      return { message: requestMessage(original) }
    }
    log.error({ err: original, path: error.path }, 'unexpected error in a GraphQL operation')
    return {
      message: INTERNAL_MESSAGE,
      ...(error.locations && { locations: error.locations }),
      ...(error.path && { path: error.path }),
      extensions: { code: 'INTERNAL_SERVER_ERROR', requestId }
    }
  })
  // A request that never reached execution (syntax, validation, bad variables) is a 400;
  // once execution ran, the response is 200 with `data` and `errors` (GraphQL over HTTP).
  const executed = execution.data !== undefined && execution.data !== null
    ? true
    : errors.some((e) => e.path !== undefined)
  return {
    // A refused field that left no data (a refused login) refuses the whole request.
    statusCode: requestStatus ?? (refusedStatus !== undefined && execution.data == null ? refusedStatus : executed ? 200 : 400),
    response: { data: execution.data ?? null, errors }
  }
}
