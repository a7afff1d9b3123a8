// OneRoster's refusals: every error of the REST binding answers 1EdTech's imsx_StatusInfo
// (imsx_codeMajor `failure`, imsx_severity `error`, a description and one code minor from the
// binding's vocabulary), with the HTTP status the binding gives that code.

/** The binding's code minor values that a refusal of this service uses (imsx_CodeMinorFieldDType). */
export type CodeMinor =
  | 'invalid_filter_field'
  | 'invalid_selection_field'
  | 'invaliddata'
  | 'unauthorisedrequest'
  | 'forbidden'
  | 'server_busy'
  | 'unknownobject'
  | 'internal_server_error'

/** The HTTP status of each code minor (1EdTech's OpenAPI file: the responses of every path). */
const STATUS: Readonly<Record<CodeMinor, number>> = {
  invalid_filter_field: 400,
  invalid_selection_field: 400,
  invaliddata: 400,
  unauthorisedrequest: 401,
  forbidden: 403,
  unknownobject: 404,
  server_busy: 429,
  internal_server_error: 500
}

/** The body of a refusal: imsx_StatusInfoDType. */
export interface StatusInfo {
  imsx_codeMajor: 'failure'
  imsx_severity: 'error'
  imsx_description: string
  imsx_CodeMinor: { imsx_codeMinorField: Array<{ imsx_codeMinorFieldName: string, imsx_codeMinorFieldValue: CodeMinor }> }
}

export function statusInfo (codeMinor: CodeMinor, description: string): StatusInfo {
  return {
    imsx_codeMajor: 'failure',
    imsx_severity: 'error',
    imsx_description: description,
    // TargetEndSystem: the binding's default name of the system that reports the code.
    imsx_CodeMinor: { imsx_codeMinorField: [{ imsx_codeMinorFieldName: 'TargetEndSystem', imsx_codeMinorFieldValue: codeMinor }] }
  }
}

/** A refusal of a OneRoster request: thrown by the routes, answered by the plugin's error handler. */
export class OneRosterError extends Error {
  readonly statusCode: number
  constructor (readonly codeMinor: CodeMinor, message: string, statusCode?: number) {
    super(message)
    this.name = 'OneRosterError'
    this.statusCode = statusCode ?? STATUS[codeMinor]
  }

  get body (): StatusInfo {
    return statusInfo(this.codeMinor, this.message)
  }
}

/**
 * The code minor of a refusal made before the routes ran, by another plugin (the shutdown's,
 * the overload's, the handler timeout's, Fastify's own), by its status: what the binding's
 * vocabulary has closest. 503 is `server_busy`: retry later, as 429.
 */
export function codeMinorOfStatus (status: number): CodeMinor {
  switch (status) {
    case 401: return 'unauthorisedrequest'
    case 403: return 'forbidden'
    case 404: return 'unknownobject'
    case 429:
    case 503: return 'server_busy'
    default: return status >= 500 ? 'internal_server_error' : 'invaliddata'
  }
}
