// The linter and formatter: neostandard (the standard style the Fastify ecosystem keeps, with its
// TypeScript rules and @stylistic formatting, fixed by `eslint --fix`), and typescript-eslint's
// type-aware recommended rules on the TypeScript (the type checker's view of promises and `any`).
import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'
import tseslint from 'typescript-eslint'

export default [
  // examples/ is a consumer's project of its own, type-checked against the documents it generates
  // (test/example-consumer.test.ts); it is not linted as part of this one.
  ...neostandard({
    ts: true,
    ignores: [...resolveIgnoresFromGitignore(), 'src/graphql/generated.ts', 'examples/**']
  }),
  ...tseslint.configs.recommendedTypeChecked.map((config) => ({ ...config, files: ['**/*.ts'] })),
  {
    rules: {
      // `void reply.send(...)`: Fastify's way to end a hook early; typescript-eslint asks for `void`
      // on a promise deliberately not awaited.
      'no-void': ['error', { allowAsStatement: true }],
      // Fastify plugins, Mercurius hooks, its persisted-query provider and tap's tests take async
      // functions by contract: one that awaits nothing there is the API's shape, not a slip.
      // no-floating-promises, no-misused-promises and await-thenable still catch the real ones.
      '@typescript-eslint/require-await': 'off'
    }
  },
  {
    files: ['**/*.ts'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // tap's t.test returns a promise that tap itself awaits (its subtests run in order).
      '@typescript-eslint/no-floating-promises': ['error', { allowForKnownSafeCalls: [{ from: 'package', name: ['test'], package: '@tapjs/test' }] }]
    }
  },
  {
    // Tests read JSON answers (`GraphQLResponse.body.data` is `Record<string, any>`) and assert their
    // shape with tap's matchers, which is the check; typing every answer twice would add nothing.
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off'
    }
  }
]
