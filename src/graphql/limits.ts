// Limits on the shape of a GraphQL document, checked on the parsed document before any resolver
// runs. The defaults (QUERY_MAX_* in src/config.ts) are graphql-armor's; the rules for depth, aliases, directives and cost are
// graphql-armor's own (its standalone packages), the token limit is graphql-js's parser option, and
// the size limit is checked on the raw text before anything parses it.
//
// A refusal is a validation error (HTTP 400, `message` and `locations`) that, unlike the errors of
// the GraphQL language itself, carries `extensions.code` QUERY_LIMIT_EXCEEDED and `extensions.limit`
// (which limit), so that a client can tell "make the query smaller" from "fix the query".
import type { Config } from '../config.js'
import { costLimitRule } from '@escape.tech/graphql-armor-cost-limit'
import { maxAliasesRule } from '@escape.tech/graphql-armor-max-aliases'
import { maxDepthRule } from '@escape.tech/graphql-armor-max-depth'
import { maxDirectivesRule } from '@escape.tech/graphql-armor-max-directives'
import {
  GraphQLError,
  type ASTVisitor,
  type GraphQLFormattedError,
  type OperationDefinitionNode,
  type ValidationContext,
  type ValidationRule
} from 'graphql'

export type LimitName = 'depth' | 'aliases' | 'directives' | 'tokens' | 'cost' | 'size'

/** The code of a refusal by a query limit: one of the ErrorCodes of errors.ts, which imports it. */
export const QUERY_LIMIT_EXCEEDED = 'QUERY_LIMIT_EXCEEDED'

/** The extensions of a refusal by a query limit: the code, and which limit. */
function queryLimitExtensions (limit: LimitName): { code: typeof QUERY_LIMIT_EXCEEDED, limit: LimitName } {
  return { code: QUERY_LIMIT_EXCEEDED, limit }
}

export interface QueryLimits {
  /** Nesting of fields; fragments count for the fields they hold, not as levels of their own. */
  maxDepth: number
  maxAliases: number
  maxDirectives: number
  /** Lexical tokens of the document (graphql-js `parse(source, { maxTokens })`). */
  maxTokens: number
  /** graphql-armor's cost: objects 2, scalars 1, times 1.5 per level of depth. */
  maxCost: number
  /** UTF-8 bytes of the query text. */
  maxBytes: number
}

export function limitError (limit: LimitName, message: string, nodes?: OperationDefinitionNode): GraphQLError {
  return new GraphQLError(message, { nodes, extensions: queryLimitExtensions(limit) })
}

type ArmorRule = (options: {
  propagateOnRejection: boolean
  onReject: Array<(context: ValidationContext | null, error: GraphQLError) => void>
}) => (context: ValidationContext) => { OperationDefinition: Record<string, unknown> }

/**
 * A graphql-armor rule that reports its refusal as a validation error of the operation (so that
 * graphql-js collects it and Mercurius caches it with the other validation errors of that text)
 * instead of throwing it, with the operation's location and our code.
 */
function armorRule (limit: LimitName, rule: ArmorRule): ValidationRule {
  return (context) => {
    const refusals: GraphQLError[] = []
    const visitor = rule({ propagateOnRejection: false, onReject: [(_context, error) => { refusals.push(error) }] })(context)
    const enter = visitor.OperationDefinition.enter as (this: unknown, node: OperationDefinitionNode) => void
    const ours: ASTVisitor = {
      OperationDefinition (node) {
        refusals.length = 0
        enter.call(visitor, node)
        for (const refusal of refusals) {
          // graphql-armor words every refusal as a "Syntax Error: ..."; it is not one.
          context.reportError(limitError(limit, refusal.message.replace(/^Syntax Error: /, ''), node))
        }
      }
    }
    return ours
  }
}

/** Validation rules for depth, aliases, directives and cost. */
/** The query limits of the configuration: the HTTP endpoint and subscriptions apply the same. */
export function queryLimitsOf (config: Pick<Config, 'queryMaxDepth' | 'queryMaxAliases' | 'queryMaxDirectives' | 'queryMaxTokens' | 'queryMaxCost' | 'queryMaxBytes'>): QueryLimits {
  return {
    maxDepth: config.queryMaxDepth,
    maxAliases: config.queryMaxAliases,
    maxDirectives: config.queryMaxDirectives,
    maxTokens: config.queryMaxTokens,
    maxCost: config.queryMaxCost,
    maxBytes: config.queryMaxBytes
  }
}

export function limitRules (limits: QueryLimits): ValidationRule[] {
  return [
    armorRule('depth', (o) => maxDepthRule({ ...o, n: limits.maxDepth, flattenFragments: true })),
    armorRule('aliases', (o) => maxAliasesRule({ ...o, n: limits.maxAliases })),
    armorRule('directives', (o) => maxDirectivesRule({ ...o, n: limits.maxDirectives })),
    armorRule('cost', (o) => costLimitRule({ ...o, maxCost: limits.maxCost }))
  ]
}

/** The refusal of a query text longer than the limit, or undefined. */
export function sizeLimitError (query: string, limits: QueryLimits): GraphQLFormattedError | undefined {
  // A UTF-8 character takes at most 4 bytes: most texts need no count.
  if (query.length * 4 <= limits.maxBytes) return undefined
  const bytes = Buffer.byteLength(query, 'utf8')
  if (bytes <= limits.maxBytes) return undefined
  return {
    message: `Query size limit of ${limits.maxBytes} bytes exceeded, found ${bytes}.`,
    extensions: queryLimitExtensions('size')
  }
}

const TOKEN_LIMIT = /^Syntax Error: Document contains more that? (\d+) tokens\. Parsing aborted\.$/

/** graphql-js's refusal of a document with too many tokens, in the form of the other limits. */
export function tokenLimitError (error: GraphQLFormattedError): GraphQLFormattedError | undefined {
  const match = TOKEN_LIMIT.exec(error.message)
  if (match === null) return undefined
  return {
    message: `Token limit of ${match[1]} exceeded.`,
    ...(error.locations && { locations: error.locations }),
    extensions: queryLimitExtensions('tokens')
  }
}
