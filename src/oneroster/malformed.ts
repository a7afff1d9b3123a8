// Requests under the binding's prefix that Fastify refuses before any route runs (a path that is
// not valid percent-encoding, a path parameter past the router's length), and query strings whose
// percent-encoding is not UTF-8 (Fastify's parser keeps such a value as it came): each answered in
// the binding's imsx_StatusInfo, never Fastify's own body. Elsewhere Fastify's body is kept.
import { STATUS_CODES } from 'node:http'
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { ONEROSTER_PATH } from './openapi.js'
import { codeMinorOfStatus, OneRosterError, statusInfo } from './status-info.js'

/** Whether a request's URL (path and query, as it came) is under the binding's prefix. */
function underBinding (url: string): boolean {
  if (!url.startsWith(ONEROSTER_PATH)) return false
  const next = url.charAt(ONEROSTER_PATH.length)
  return next === '' || next === '/' || next === '?'
}

/** Fastify's `frameworkErrors`: the refusals its router makes (FST_ERR_BAD_URL 400, FST_ERR_MAX_PARAM_LENGTH 414). */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const statusCode = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500
  // The app's onSend hooks do not run for these replies (Fastify makes them outside any route's context).
  void reply.header('x-request-id', request.id)
  if (underBinding(request.raw.url ?? '')) {
    void reply.code(statusCode).send(statusInfo(codeMinorOfStatus(statusCode), statusCode === 400
      ? 'The URL is not valid percent-encoding (RFC 3986: % and two hex digits, UTF-8)'
      : `The request was refused: ${error.message}`))
    return
  }
  // The body Fastify sends without this option.
  void reply.code(statusCode).send({ error: STATUS_CODES[statusCode], code: error.code, message: error.message, statusCode })
}

/**
 * The binding's onRequest check of the query string: every name and value percent-decodes as UTF-8
 * (a '+' is a space, as in a form). Fastify's parser keeps a value it cannot decode as it came, which
 * the routes would otherwise read as text (a filter that never matches, a field name with a %).
 */
export function checkQueryString (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
  const url = request.raw.url ?? ''
  const at = url.indexOf('?')
  if (at !== -1) {
    for (const part of url.slice(at + 1).split('&')) {
      try {
        decodeURIComponent(part.replaceAll('+', ' '))
      } catch {
        done(new OneRosterError('invaliddata', `The query string is not valid percent-encoding (RFC 3986: % and two hex digits, UTF-8): '${part}'`))
        return
      }
    }
  }
  done()
}
