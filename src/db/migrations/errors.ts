/** A migration could not be made or applied; the message says why. */
export class MigrationEngineError extends Error {
  override name = 'MigrationEngineError'
}
