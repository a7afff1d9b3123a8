// Document hashes, and the trusted-documents manifest (TRUSTED_DOCUMENTS): the file GraphQL Code
// Generator's client preset writes with `persistedDocuments: true` (persisted-documents.json), an
// object mapping each operation's document identifier to its text: the SHA-256 hex, prefixed
// `sha256:` as GraphQL over HTTP's persisted documents appendix has it (client preset 6 writes it
// so) or bare. Read and checked once, at
// start-up (config.ts); kept apart from the provider so that the configuration loads no GraphQL
// server code.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'

/** The hash of a document the way Apollo's APQ and the client preset compute it: SHA-256, lowercase hex. */
export function documentHash (document: string): string {
  return createHash('sha256').update(document, 'utf8').digest('hex')
}

export const DOCUMENT_HASH = /^[0-9a-f]{64}$/

/** A manifest key: `sha256:<hex>` or the bare hex; the hex is group 1. */
const MANIFEST_KEY = /^(?:sha256:)?([0-9a-f]{64})$/

/**
 * The trusted documents of a manifest file, by hash. Throws an Error saying what is wrong (the
 * caller names the variable): unreadable file, not a JSON object of strings, a key that is not a
 * SHA-256 hex (the preset's `hashAlgorithm` must be `sha256`, its default), or a key that is not
 * the hash of its document.
 */
export function readDocumentManifest (path: string): ReadonlyMap<string, string> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (err) {
    throw new Error(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
  }
  let manifest: unknown
  try {
    manifest = JSON.parse(text)
  } catch (err) {
    throw new Error(`${path} is not JSON: ${(err as Error).message}`)
  }
  if (manifest === null || typeof manifest !== 'object' || Array.isArray(manifest)) {
    throw new Error(`${path} must be a JSON object mapping document hashes to documents`)
  }
  const documents = new Map<string, string>()
  for (const [key, document] of Object.entries(manifest)) {
    if (typeof document !== 'string' || document.trim() === '') {
      throw new Error(`${path}: the document of ${key} must be a non-empty string`)
    }
    const hash = MANIFEST_KEY.exec(key)?.[1]
    if (hash === undefined) {
      throw new Error(`${path}: "${key}" is not a SHA-256 hash in lowercase hex (generate the manifest with hashAlgorithm 'sha256')`)
    }
    if (documentHash(document) !== hash) {
      throw new Error(`${path}: "${key}" is not the SHA-256 hash of its document`)
    }
    documents.set(hash, document)
  }
  if (documents.size === 0) throw new Error(`${path} holds no documents`)
  return documents
}
