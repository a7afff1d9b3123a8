// GraphQL subscriptions over WebSocket: GET /subscriptions, protocol `graphql-transport-ws`, served
// by graphql-ws's transport-independent server (`makeServer`) on @fastify/websocket's sockets
// (why not Mercurius's own subscriptions: docs/decisions.md). docs/api/subscriptions.md is the
// user's page: the close codes, the limits and the reconnect with a refreshed token.
//
// - Who: the access token travels in `connection_init` ({"authorization": "Bearer ..."} or
//   {"token": "..."}); without a valid one the socket closes 4403. Every connection's token is
//   checked again each second and at every access change (the user disabled, moved or unassigned,
//   the client revoked, on any node: src/auth/access-changes.ts): an expired token closes it with
//   4440, a revoked one with 4441.
// - What: each operation is parsed, limited, validated and checked against the caller's scopes as
//   the HTTP endpoint does (src/plugins/graphql.ts), then runs with a context of the same making
//   (src/graphql/context.ts): the caller's school client, both walls. Errors pass the app's one
//   formatter (src/graphql/errors.ts).
// - Bounds: SUBSCRIPTIONS_PER_NODE and SUBSCRIPTIONS_PER_CALLER open subscriptions; a socket holding
//   more than SUBSCRIPTION_MAX_BUFFERED_BYTES unsent (a subscriber that does not read) closes with
//   4413 and its subscriptions stop at once; pings every SUBSCRIPTION_KEEPALIVE_MS, a peer that did
//   not answer the last one is dropped; browsers only from CORS_ORIGINS; the upgrade request counts
//   on the rate limits as an HTTP request does, and so does each subscribe; at shutdown, once the
//   drain is over, every socket closes with 1001 (going away).
// - Audit: each pushed event's reads of student and teacher records are recorded by the access
//   audit as the caller's, under the operation's name (src/audit/plugin.ts).
import websocket, { type WebSocket } from '@fastify/websocket'
import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Gauge } from 'prom-client'
import { getOperationAST, GraphQLError, NoSchemaIntrospectionCustomRule, OperationTypeNode, parse, specifiedRules, subscribe, validate, type ExecutionArgs, type ExecutionResult, type ValidationRule } from 'graphql'
import { CloseCode, handleProtocols, makeServer, type Context } from 'graphql-ws'
import type { MercuriusContext } from 'mercurius'
import { callerId, accessOf, type Identity } from '../auth/identity.js'
import { accessTokenExpiry } from '../auth/tokens.js'
import { ACCESS_CHANGED_CHANNEL } from '../db/notifications.js'
import { buildContext } from '../graphql/context.js'
import { codedError, createErrorFormatter, outOfScope, refusal, tooManyRequests } from '../graphql/errors.js'
import { SUBSCRIPTIONS_PATH } from '../graphql/http.js'
import { limitRules, queryLimitsOf, sizeLimitError } from '../graphql/limits.js'
import { watchLiveChanges } from '../graphql/live-changes.js'
import { outOfScopeFields } from '../graphql/scope-check.js'
import { implementSubscriptions } from '../graphql/subscriptions.js'

/** The close codes this endpoint sends besides the protocol's own (docs/api/subscriptions.md). */
export const SUBSCRIPTION_CLOSE = {
  /** No valid access token in `connection_init` (graphql-ws's code: its clients retry, calling connectionParams again). */
  forbidden: { code: CloseCode.Forbidden, reason: 'Forbidden' },
  /** The connection's access token expired: reconnect with a fresh one. */
  expired: { code: 4440, reason: 'Access token expired' },
  /** The token was revoked (user disabled, moved or unassigned; client revoked or its scopes changed). */
  revoked: { code: 4441, reason: 'Access revoked' },
  /** More than SUBSCRIPTION_MAX_BUFFERED_BYTES waited unsent: the subscriber does not read. */
  tooSlow: { code: 4413, reason: 'Too much unread: resume from your last cursor' },
  /** The node shuts down (after the drain): reconnect, another node answers. */
  goingAway: { code: 1001, reason: 'Going away' },
  /** The service failed handling a message. */
  internal: { code: CloseCode.InternalServerError, reason: 'Internal server error' }
} as const

/** How often every connection's token is checked again (expiry; revocation also at once on notification). */
const ACCESS_RECHECK_MS = 1000

export interface SubscriptionsPluginOptions {
  /** The clock tokens expire by (BuildOptions.now). */
  now: () => number
}

/** One WebSocket connection: its socket, its upgrade request, and once initialised, its caller. */
interface Connection {
  readonly socket: WebSocket
  readonly request: FastifyRequest
  readonly reply: FastifyReply | undefined
  caller: { bearer: string, identity: Identity, id: string, expiresAt: number } | undefined
  /** Its open subscriptions' ids (counted on the limits). */
  readonly subscriptions: Set<string>
  context: Context<Record<string, unknown> | undefined, Extra> | undefined
  closing: boolean
}

interface Extra { readonly connection: Connection }

const FORBIDDEN_ORIGIN = JSON.stringify(refusal('FORBIDDEN', 'This origin may not open subscriptions (CORS_ORIGINS)'))

/** The bearer credentials of a `connection_init` payload: `authorization` (or `Authorization`) as the header, or `token` alone. */
function bearerOf (params: Readonly<Record<string, unknown>> | undefined): string | undefined {
  if (params === undefined || params === null || typeof params !== 'object') return undefined
  const header = params.authorization ?? params.Authorization
  if (typeof header === 'string') return header
  return typeof params.token === 'string' ? `Bearer ${params.token}` : undefined
}

/** A coded error (ErrorWithProps) as the GraphQLError graphql-ws sends; the formatter reads its original. */
const asGraphQLError = (error: Error): GraphQLError => error instanceof GraphQLError ? error : new GraphQLError(error.message, { originalError: error })

export default fp<SubscriptionsPluginOptions>(async (app, { now }) => {
  const config = app.config
  const production = config.env === 'production'
  const schema = app.graphql.schema
  implementSubscriptions(schema)
  const limits = queryLimitsOf(config)
  const rules: ValidationRule[] = [...specifiedRules, ...limitRules(limits), ...(production ? [NoSchemaIntrospectionCustomRule] : [])]
  const formatter = createErrorFormatter({ production, bodyLimitBytes: config.bodyLimitBytes })
  const allowedOrigins = new Set(config.corsOrigins)

  const live = await watchLiveChanges(app.db, app.log)
  const connections = new Set<Connection>()
  const perCaller = new Map<string, number>()
  let open = 0

  const openGauge = new Gauge({
    name: 'sds_subscriptions_open',
    help: 'GraphQL subscriptions open on this node',
    registers: [app.metrics.registry],
    collect () { openGauge.set(open) }
  })
  const closes = new Counter({
    name: 'sds_subscription_closes_total',
    help: 'Subscription sockets the service closed, by reason (expired, revoked, tooSlow, goingAway, internal)',
    labelNames: ['reason'],
    registers: [app.metrics.registry]
  })

  /** Closes a connection (once) and stops its subscriptions at once, whatever the peer does. */
  function end (connection: Connection, why: keyof typeof SUBSCRIPTION_CLOSE): void {
    if (connection.closing) return
    connection.closing = true
    const { code, reason } = SUBSCRIPTION_CLOSE[why]
    closes.inc({ reason: why })
    app.log.info({ code, reason, caller: connection.caller?.id }, 'closing a subscription connection')
    connection.socket.close(code, reason)
    for (const iterator of Object.values(connection.context?.subscriptions ?? {})) {
      if (iterator !== null && 'return' in iterator) void iterator.return?.(undefined)
    }
  }

  /** Closes the connections whose token expired or no longer stands. */
  function recheck (): void {
    const time = now()
    for (const connection of connections) {
      const caller = connection.caller
      if (caller === undefined || connection.closing) continue
      if (time >= caller.expiresAt) end(connection, 'expired')
      else if (app.auth.identify(caller.bearer).kind !== caller.identity.kind) end(connection, 'revoked')
    }
  }
  const rechecks = setInterval(recheck, ACCESS_RECHECK_MS)
  rechecks.unref()
  // After the node's own access changes (notifications.ts orders them): a revocation closes at once.
  const accessListener = await app.db.subscribe(ACCESS_CHANGED_CHANNEL, 'subscriptions', {
    notify: recheck,
    async listening () { recheck() },
    lost () {}
  })

  function release (connection: Connection, id: string): void {
    if (!connection.subscriptions.delete(id)) return
    open -= 1
    const caller = connection.caller!.id
    const count = (perCaller.get(caller) ?? 1) - 1
    if (count === 0) perCaller.delete(caller)
    else perCaller.set(caller, count)
  }

  /** A result's or a refusal's errors as the app's formatter shows them (never a stack or SQL). */
  const format = (context: MercuriusContext, result: ExecutionResult & { errors: readonly GraphQLError[] }) =>
    formatter(result, context).response

  /** Who runs each subscription's events (its connection's request) and as which operation, for the access audit. */
  const audited = new WeakMap<object, { request: FastifyRequest, operation: string }>()

  /**
   * graphql-js's subscribe, each event's execution (the reads of its records) tallied by the access
   * audit as one read of the caller: graphql-js executes an event when its iterator's `next` is called.
   */
  async function auditedSubscribe (args: ExecutionArgs): Promise<AsyncGenerator<ExecutionResult> | ExecutionResult> {
    const by = audited.get(args.contextValue as object)
    if (by === undefined) return await subscribe(args)
    // The subscribe resolver reads the feed's first page (entries name their records: counted).
    const result = await app.audit.tallied(by.request, by.operation, async () => await subscribe(args))
    if (!(Symbol.asyncIterator in result)) return result
    const next = result.next.bind(result)
    result.next = async () => await app.audit.tallied(by.request, by.operation, next)
    return result
  }

  const server = makeServer<Record<string, unknown> | undefined, Extra>({
    subscribe: auditedSubscribe,
    async onConnect (ctx) {
      const connection = ctx.extra.connection
      const bearer = bearerOf(ctx.connectionParams)
      const identity = bearer === undefined ? undefined : app.auth.identify(bearer)
      const id = identity === undefined ? null : callerId(identity)
      // A user of no school has no feed: refused as a bad token is.
      if (bearer === undefined || identity === undefined || id === null || (identity.kind === 'user' && identity.schoolId === null)) return false
      connection.caller = { bearer, identity, id, expiresAt: accessTokenExpiry(bearer.replace(/^Bearer +/i, '').trim()) }
      // The request's caller from now on: the rate limits and the context read it there.
      connection.request.identityMemo = identity
      connection.context = ctx
      return true
    },

    async onSubscribe (ctx, id, payload) {
      const connection = ctx.extra.connection
      const caller = connection.caller!
      const refuse = (error: Error): GraphQLError[] => [asGraphQLError(error)]
      if (app.limits.limitRequest !== undefined && connection.reply !== undefined) {
        const limited = await app.limits.limitRequest(connection.request, connection.reply)
        if (limited !== undefined) {
          return refuse(tooManyRequests(`Too many requests: the ${limited.limit} limit of ${limited.max} requests per minute is reached; retry in ${limited.retryAfter} s`, limited.retryAfter))
        }
      }
      const tooLarge = sizeLimitError(payload.query, limits)
      if (tooLarge !== undefined) return [new GraphQLError(tooLarge.message, { extensions: tooLarge.extensions })]
      let document
      try {
        document = parse(payload.query, { maxTokens: limits.maxTokens })
      } catch (err) {
        return refuse(err as Error)
      }
      const invalid = validate(schema, document, rules)
      if (invalid.length > 0) return invalid
      const operation = getOperationAST(document, payload.operationName)
      if (operation === null || operation === undefined) return [new GraphQLError('Unable to identify the operation: name it in operationName')]
      if (operation.operation !== OperationTypeNode.SUBSCRIPTION) {
        return refuse(codedError('BAD_REQUEST', 'Only subscriptions are served over WebSocket: send queries and mutations over HTTP'))
      }
      const refused = outOfScopeFields(schema, document, operation, accessOf(caller.identity)!)
      if (refused.length > 0) return refuse(outOfScope(refused))
      if (open >= config.subscriptionsPerNode) {
        return refuse(codedError('SERVICE_UNAVAILABLE', 'This node holds as many subscriptions as it may (SUBSCRIPTIONS_PER_NODE): reconnect, another node may answer'))
      }
      const held = perCaller.get(caller.id) ?? 0
      if (held >= config.subscriptionsPerCaller) {
        return refuse(codedError('TOO_MANY_REQUESTS', `Too many subscriptions: at most ${config.subscriptionsPerCaller} open at once per caller on a node (SUBSCRIPTIONS_PER_CALLER)`))
      }
      connection.subscriptions.add(id)
      open += 1
      perCaller.set(caller.id, held + 1)
      // The HTTP endpoint's context (the caller's school client, both walls), and what wakes a subscriber.
      const context = {
        ...buildContext(app, connection.request),
        app,
        reply: undefined,
        liveChanges: () => live
      } as unknown as MercuriusContext
      audited.set(context, { request: connection.request, operation: operation.name?.value ?? 'anonymous' })
      return { schema, document, operationName: payload.operationName, variableValues: payload.variables, contextValue: context }
    },

    onNext (_ctx, _id, _payload, args, result) {
      if (result.errors === undefined || result.errors.length === 0) return
      return format(args.contextValue as MercuriusContext, { ...result, errors: result.errors })
    },

    onError (_ctx, _id, _payload, errors) {
      return format({ app, reply: undefined } as unknown as MercuriusContext, { errors }).errors
    },

    onComplete (ctx, id) {
      release(ctx.extra.connection, id)
    }
  })

  // The upgrade request passes the app's hooks (CORS, the shutdown's refusal) and these of its own.
  await app.register(async (route) => {
    await route.register(websocket, {
      options: {
        maxPayload: config.bodyLimitBytes,
        handleProtocols: (protocols) => handleProtocols(protocols)
      },
      // Shutdown closes the sockets (whenRefusing, below); what is left closes as the app closes.
      preClose (done) {
        for (const connection of connections) end(connection, 'goingAway')
        done()
      }
    })
    // Browsers send their page's Origin; WebSocket has no CORS, so the listed origins are checked here.
    route.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      const origin = request.headers.origin
      if (origin === undefined || allowedOrigins.has(origin)) {
        done()
        return
      }
      void reply.code(403).type('application/json').send(FORBIDDEN_ORIGIN)
    })
    if (app.limits.checkRequest !== undefined) route.addHook('onRequest', app.limits.checkRequest)
    // Each subscribe counts on the rate limits as a request; the hijacked reply keeps the headers nobody reads.
    const replies = new WeakMap<FastifyRequest, FastifyReply>()
    route.addHook('preHandler', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
      replies.set(request, reply)
      done()
    })

    route.get(SUBSCRIPTIONS_PATH, { websocket: true }, (socket, request) => {
      const connection: Connection = {
        socket,
        request,
        reply: replies.get(request),
        caller: undefined,
        subscriptions: new Set(),
        context: undefined,
        closing: false
      }
      connections.add(connection)
      if (app.shutdown.state === 'closing') end(connection, 'goingAway')

      let answered = true
      const pings = config.subscriptionKeepaliveMs > 0
        ? setInterval(() => {
          // No pong since the last ping: the peer is gone.
          if (!answered) {
            socket.terminate()
            return
          }
          answered = false
          socket.ping()
        }, config.subscriptionKeepaliveMs)
        : undefined
      socket.on('pong', () => { answered = true })

      const closed = server.opened({
        protocol: socket.protocol,
        // Not awaiting the flush: a subscriber that does not read fills the socket's buffer, which
        // is bounded here instead of stalling its subscriptions.
        send (data) {
          if (socket.readyState !== socket.OPEN || connection.closing) return
          socket.send(data)
          if (socket.bufferedAmount > config.subscriptionMaxBufferedBytes) end(connection, 'tooSlow')
        },
        close (code, reason) {
          connection.closing = true
          socket.close(code, reason)
        },
        onMessage (handle) {
          socket.on('message', (data) => {
            handle(Buffer.isBuffer(data) ? data.toString('utf8') : Buffer.concat(Array.isArray(data) ? data : [Buffer.from(data)]).toString('utf8')).catch((err: unknown) => {
              request.log.error({ err }, 'a subscription message failed')
              end(connection, 'internal')
            })
          })
        }
      }, { connection })

      socket.once('close', (code, reason) => {
        clearInterval(pings)
        connections.delete(connection)
        for (const id of [...connection.subscriptions]) release(connection, id)
        void closed(code, reason.toString())
      })
    })
  })

  app.shutdown.whenRefusing(() => {
    for (const connection of connections) end(connection, 'goingAway')
  })
  app.addHook('onClose', async () => {
    clearInterval(rechecks)
    await accessListener.close()
    await live.close()
  })
}, { name: 'subscriptions', dependencies: ['config', 'database', 'metrics', 'auth', 'access-audit', 'rate-limit', 'graphql', 'shutdown'] })
