// GraphQL Code Generator for the example consumer: typed documents from the SDL the service
// publishes, and the trusted-documents manifest of the same documents (docs/api/clients.md). Run from this folder: npx graphql-codegen --config codegen.ts
import type { CodegenConfig } from '@graphql-codegen/cli'

const api = process.env.SCHOOL_DATA_URL ?? 'http://127.0.0.1:4000/'

const config: CodegenConfig = {
  // Relative imports with .js extensions, as Node's ES modules need.
  emitLegacyCommonJSImports: false,
  // Ends in .graphql: the URL loader reads SDL with a GET instead of sending introspection.
  schema: new URL('schema.graphql', api).toString(),
  documents: ['list-students.ts', 'enrol-student.ts'],
  generates: {
    './gql/': {
      preset: 'client',
      config: {
        useTypeImports: true,
        strictScalars: true,
        scalars: { Date: 'string', DateTime: 'string' }
      },
      presetConfig: {
        // gql/persisted-documents.json: { "<sha256 hex>": "<document>" }, for TRUSTED_DOCUMENTS.
        persistedDocuments: true
      }
    }
  }
}
export default config
