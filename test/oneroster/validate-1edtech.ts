// Answers checked against 1EdTech's own OpenAPI file of the rostering service, when a copy is at
// hand (ONEROSTER_OPENAPI_FILE; the file stays outside the repository): the operation of the
// request's concrete path in their file, the response their file gives for its status (or their
// `default`), and the body against that response's schema, with ajv not strict (their schemas
// carry OpenAPI's own keywords). validate.ts checks every answer against the service's own
// description, which test/oneroster-openapi.test.ts compares with their file; this checks the
// answers against their file with nothing of ours in between.
import { readFileSync } from 'node:fs'
import { Ajv, type ValidateFunction } from 'ajv'
import ajvFormats from 'ajv-formats'
import { BASE } from './answers.js'

const DOCUMENT_ID = 'oneroster-1edtech.json'

/** A checker of answers against the file at `file`: `path` is the request's (base path and query included); returns the problems, none for a valid answer. */
export function oneEdTechValidator (file: string): (path: string, status: number, body: unknown) => string[] {
  const document = JSON.parse(readFileSync(file, 'utf8')) as { paths: Record<string, any>, components: { schemas: object } }
  const ajv = new Ajv({ allErrors: true, strict: false })
  ajvFormats.default(ajv)
  ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: document.components.schemas } })
  const templates = Object.keys(document.paths).map((template) => ({ template, pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`) }))
  const validators = new Map<string, ValidateFunction>()
  return (path, status, body) => {
    const bare = path.split('?')[0]!.slice(BASE.length)
    const matching = templates.filter(({ pattern }) => pattern.test(bare))
    if (matching.length !== 1) return [`${bare}: ${matching.length} operations of 1EdTech's file match`]
    const operation = document.paths[matching[0]!.template].get
    if (operation === undefined) return [`${bare}: 1EdTech's file has no GET`]
    const response = operation.responses[String(status)] ?? operation.responses.default
    const reference = response?.content?.['application/json']?.schema?.$ref as string | undefined
    if (reference === undefined) return [`${bare}: 1EdTech's file gives no JSON schema for ${status}`]
    let validate = validators.get(reference)
    if (validate === undefined) {
      validate = ajv.compile({ $ref: DOCUMENT_ID + reference })
      validators.set(reference, validate)
    }
    return validate(body) ? [] : (validate.errors ?? []).map((error) => `${bare} ${status}: ${error.instancePath || '/'} ${error.message ?? ''}`)
  }
}
