// The GraphQL operation of a request, named in one place for the request log, the metrics and the
// access audit. It is taken once, in the endpoint's preExecution hook (src/plugins/graphql.ts), from
// the document Mercurius parsed (and keeps, per query text): nothing here parses the query again.
// An answer served by the response cache carries the name its first request ran under; a request
// refused before execution (a syntax or validation error) is named by what it asks for, without
// parsing it.
import type { FastifyRequest } from 'fastify'
import { OperationTypeNode, type OperationDefinitionNode } from 'graphql'

declare module 'fastify' {
  interface FastifyRequest {
    /** The GraphQL operation of this request, as executed (set before execution: `executing`). */
    graphqlOperation?: string
    /** Its type: the response cache keeps the answers of queries only. */
    graphqlOperationType?: OperationTypeNode
    /** The name of the operation whose answer the response cache served (response-cache.ts). */
    graphqlCachedOperation?: string
  }
}

/** A GraphQL name, as an operation name must be (and no longer than a label should be). */
export const OPERATION_NAME = /^[_A-Za-z][_0-9A-Za-z]{0,99}$/
// The first named operation of a document, for a request that was not executed.
const NAMED_OPERATION = /^\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]{0,99})/

/** Records the operation Mercurius is about to execute for `request` (its preExecution hook). */
export function executing (request: FastifyRequest, operation: OperationDefinitionNode): void {
  request.graphqlOperation = operation.name?.value ?? 'anonymous'
  request.graphqlOperationType = operation.operation
}

/** Whether the request executed a query (not a mutation or subscription). */
export function executedQuery (request: FastifyRequest): boolean {
  return request.graphqlOperationType === OperationTypeNode.QUERY
}

/** The operation of a GraphQL request: what was executed, else what the answer served ran, else what the request names. */
export function operationOf (request: FastifyRequest): string {
  if (request.graphqlOperation !== undefined) return request.graphqlOperation
  if (request.graphqlCachedOperation !== undefined) return request.graphqlCachedOperation
  const params = (request.method === 'GET' ? request.query : request.body) as { query?: unknown, operationName?: unknown } | undefined
  if (typeof params?.operationName === 'string' && OPERATION_NAME.test(params.operationName)) return params.operationName
  if (typeof params?.query === 'string') {
    const match = NAMED_OPERATION.exec(params.query)
    if (match !== null) return match[1]!
  }
  return 'anonymous'
}
