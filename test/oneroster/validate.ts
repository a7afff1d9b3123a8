// Checks an answer of the OneRoster REST endpoints against the service's OpenAPI description
// (src/oneroster/openapi.ts): the operation of the request's concrete path, a status that operation
// lists, the body against that response's schema with ajv (JSON Schema; the description's schemas
// use no OpenAPI-only keyword, so ajv runs strict and a typo in them fails at compile), the
// X-Total-Count a collection carries and the pages its Link header names. Returns readable errors,
// none for a valid answer.
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import ajvFormats from 'ajv-formats'
import type { OpenAPIV3 } from 'openapi-types'
import { oneRosterDescription } from '../../src/oneroster/openapi.js'

export interface Answer {
  method: string
  /** The request's path, with the service's base path and any query string (as given to inject). */
  path: string
  status: number
  headers: Record<string, string | string[] | number | undefined>
  /** The parsed JSON body. */
  body: unknown
}

const DOCUMENT_ID = 'oneroster-openapi.json'

const ajv = new Ajv({ allErrors: true, strict: true })
// OpenAPI 3.0's annotation keywords that JSON Schema lacks (ajv documents `nullable` as its own),
// and `components`, which holds the schemas in the document ajv is given below.
ajv.addVocabulary(['example', 'externalDocs', 'xml', 'components'])
// ajv-formats is CommonJS: Node's default import is its module.exports, whose `default` is the plugin.
ajvFormats.default(ajv)
// The description's schemas where they are in it, so that their `#/components/schemas/...`
// references resolve unchanged; each response schema is compiled once, when first used.
ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: oneRosterDescription.components?.schemas } })

const validators = new Map<string, ValidateFunction>()

function validatorOf (reference: string): ValidateFunction {
  let validate = validators.get(reference)
  if (validate === undefined) {
    validate = ajv.compile({ $ref: DOCUMENT_ID + reference })
    validators.set(reference, validate)
  }
  return validate
}

/** The object a `#/components/...` reference of the description names. */
export function resolve<T> (value: T | OpenAPIV3.ReferenceObject): T {
  if (typeof value !== 'object' || value === null || !('$ref' in value)) return value
  let target: any = oneRosterDescription
  for (const step of value.$ref.replace(/^#\//, '').split('/')) target = target?.[step]
  if (target === undefined) throw new Error(`the description has no ${value.$ref}`)
  return resolve(target as T | OpenAPIV3.ReferenceObject)
}

export const basePath = oneRosterDescription.servers?.[0]?.url ?? ''

interface Operation {
  template: string
  operation: OpenAPIV3.OperationObject
}

// Each path template as a pattern; concrete segments before templated ones, as OpenAPI matches.
const templates = Object.keys(oneRosterDescription.paths)
  .map((template) => ({
    template,
    pattern: new RegExp('^' + template.replace(/\{[^}/]+\}/g, '[^/]+') + '$'),
    templated: (template.match(/\{/g) ?? []).length
  }))
  .sort((a, b) => a.templated - b.templated)

/** The description's operation for a method and a concrete path (with the base path), if any. */
export function operationFor (method: string, path: string): Operation | undefined {
  const pathname = new URL(path, 'http://service.invalid').pathname
  if (!pathname.startsWith(basePath + '/')) return undefined
  const relative = pathname.slice(basePath.length)
  const match = templates.find(({ pattern }) => pattern.test(relative))
  if (match === undefined) return undefined
  const item = oneRosterDescription.paths[match.template]
  const operation = item?.[method.toLowerCase() as OpenAPIV3.HttpMethods]
  return operation === undefined ? undefined : { template: match.template, operation }
}

function describe (error: ErrorObject): string {
  const at = error.instancePath === '' ? 'the body' : error.instancePath
  switch (error.keyword) {
    case 'enum':
      return `${at} must be one of ${(error.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
    case 'additionalProperties':
      return `${at} has the property "${String(error.params.additionalProperty)}", which the schema does not allow`
    case 'required':
      return `${at} lacks the required property "${String(error.params.missingProperty)}"`
    default:
      return `${at} ${error.message ?? error.keyword}`
  }
}

function header (headers: Answer['headers'], name: string): string | undefined {
  const value = headers[name.toLowerCase()] ?? headers[name]
  return Array.isArray(value) ? value.join(', ') : value === undefined ? undefined : String(value)
}

/**
 * The fields a request selected with `fields` (the binding writes them comma-separated), or
 * undefined when it selected none. An answer with a selection carries only those fields of each
 * record, so a required field outside it is left out on purpose.
 */
function selectedFields (path: string): Set<string> | undefined {
  const values = new URL(path, 'http://service.invalid').searchParams.getAll('fields')
  if (values.length === 0) return undefined
  return new Set(values.flatMap((value) => value.split(',')).map((field) => field.trim()).filter((field) => field !== ''))
}

/** The envelope of a Set or Single schema: its one property, and whether that holds a list. */
function envelopeOf (reference: string): { key: string, list: boolean } | undefined {
  const schema = resolve<OpenAPIV3.SchemaObject>({ $ref: reference })
  const [key, ...others] = Object.keys(schema.properties ?? {})
  if (key === undefined || others.length > 0) return undefined
  const property = resolve(schema.properties![key]!)
  return { key, list: property.type === 'array' }
}

/** The errors of an answer against the description; an empty list for a valid one. */
export function validateAnswer (answer: Answer): string[] {
  const request = `${answer.method.toUpperCase()} ${answer.path}`
  const found = operationFor(answer.method, answer.path)
  if (found === undefined) return [`${request}: the description has no operation for this path`]
  const { operation, template } = found
  const responses = operation.responses
  const listed = responses[String(answer.status)]
  // `default` stands for the failures an operation does not list one by one, never for a success.
  const response = listed ?? (answer.status >= 400 ? responses.default : undefined)
  if (response === undefined) {
    return [`${request}: status ${answer.status} is not one that ${operation.operationId ?? template} lists (${Object.keys(responses).join(', ')})`]
  }
  const { content, headers } = resolve(response)
  const errors: string[] = []
  const schema = content?.['application/json']?.schema
  if (schema === undefined) {
    if (answer.body !== undefined && answer.body !== '') errors.push('the response has no body in the description, but one was sent')
  } else {
    const type = header(answer.headers, 'content-type')
    if (type === undefined || !/^application\/json\b/.test(type)) errors.push(`content-type is ${type ?? 'missing'}, not application/json`)
    if (!('$ref' in schema)) throw new Error(`${template}: an inline response schema; the description names its schemas`)
    const validate = validatorOf(schema.$ref)
    if (!validate(answer.body)) {
      const fields = selectedFields(answer.path)
      const envelope = envelopeOf(schema.$ref)
      const record = envelope === undefined ? undefined : new RegExp(`^/${envelope.key}${envelope.list ? '/\\d+' : ''}$`)
      for (const error of validate.errors ?? []) {
        const unselected = fields !== undefined && error.keyword === 'required' && record?.test(error.instancePath) === true &&
          !fields.has(String(error.params.missingProperty))
        if (!unselected) errors.push(describe(error))
      }
    }
    errors.push(...selectionErrors(answer, schema.$ref))
  }
  if (answer.status === 200 && headers?.['X-Total-Count'] !== undefined) errors.push(...totalCountErrors(answer, schema))
  if (answer.status === 200 && headers?.Link !== undefined) errors.push(...linkErrors(answer, template))
  return errors.map((error) => `${request} ${answer.status}: ${error}`)
}

/** A record of an answer to a request with `fields` carries nothing else. */
function selectionErrors (answer: Answer, reference: string): string[] {
  const fields = selectedFields(answer.path)
  const envelope = envelopeOf(reference)
  if (fields === undefined || envelope === undefined || answer.status !== 200) return []
  const body = answer.body as Record<string, unknown> | undefined
  const value = body?.[envelope.key]
  const records = envelope.list ? (Array.isArray(value) ? value : []) : [value]
  const errors: string[] = []
  records.forEach((record, index) => {
    if (typeof record !== 'object' || record === null) return
    const at = envelope.list ? `/${envelope.key}/${index}` : `/${envelope.key}`
    for (const key of Object.keys(record)) {
      if (!fields.has(key)) errors.push(`${at} has the property "${key}", which the request's fields did not select`)
    }
  })
  return errors
}

/** A collection says, in X-Total-Count, how many records all its pages hold together. */
function totalCountErrors (answer: Answer, schema: OpenAPIV3.ReferenceObject | OpenAPIV3.SchemaObject | undefined): string[] {
  const value = header(answer.headers, 'X-Total-Count')
  if (value === undefined) return ['X-Total-Count is missing']
  if (!/^\d+$/.test(value)) return [`X-Total-Count is "${value}", not a count`]
  const envelope = schema !== undefined && '$ref' in schema ? envelopeOf(schema.$ref) : undefined
  const records = envelope === undefined ? undefined : (answer.body as Record<string, unknown> | undefined)?.[envelope.key]
  if (Array.isArray(records) && Number(value) < records.length) {
    return [`X-Total-Count is ${value}, fewer than the ${records.length} records of this page`]
  }
  return []
}

const PAGE_RELATIONS = ['next', 'prev', 'first', 'last']

/** The Link header, when sent, names pages of the same collection: `<url>; rel="next"`, ... */
function linkErrors (answer: Answer, template: string): string[] {
  const value = header(answer.headers, 'Link')
  if (value === undefined) return []
  const errors: string[] = []
  for (const link of value.split(/,(?=\s*<)/)) {
    const match = /^\s*<([^>]*)>\s*;\s*rel="?([a-z]+)"?\s*$/.exec(link)
    if (match === null) {
      errors.push(`Link has "${link.trim()}", not <url>; rel="..."`)
      continue
    }
    const [, target, relation] = match as unknown as [string, string, string]
    if (!PAGE_RELATIONS.includes(relation)) errors.push(`Link has rel="${relation}", not one of ${PAGE_RELATIONS.join(', ')}`)
    const url = new URL(target, 'http://service.invalid')
    if (operationFor('GET', url.pathname + url.search)?.template !== template || url.pathname !== new URL(answer.path, 'http://service.invalid').pathname) {
      errors.push(`Link's ${relation} page <${target}> is not a page of ${new URL(answer.path, 'http://service.invalid').pathname}`)
    }
  }
  return errors
}

/** The errors of a refusal's body against imsx_StatusInfoDType: for an answer no operation of the description names (a path that matches no endpoint). */
export function validateStatusInfo (body: unknown): string[] {
  const validate = validatorOf('#/components/schemas/imsx_StatusInfoDType')
  return validate(body) ? [] : (validate.errors ?? []).map(describe)
}
