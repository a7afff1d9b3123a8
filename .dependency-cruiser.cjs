// The layers of src/, checked by `npm run lint:deps` (part of `npm test`) with dependency-cruiser:
// no import cycle anywhere, the database layer (src/db) below the app: it is given what it needs
// from auth, the audit or GraphQL (the counting step, the denied columns) by its callers; and the
// record kinds (src/records: their reads and writes) below the operators' work (src/admin), which
// uses them.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import cycle: each module of src/ depends only on modules that do not depend on it back.',
      from: { path: '^src/' },
      to: { circular: true }
    },
    {
      name: 'db-below-the-app',
      severity: 'error',
      comment: 'src/db is the layer under auth, the audit, GraphQL and the plugins: they pass it what it needs.',
      from: { path: '^src/db/' },
      to: { path: '^src/(auth|audit|graphql|plugins)/' }
    },
    {
      name: 'records-below-admin',
      severity: 'error',
      comment: 'src/records owns the record kinds\' reads and writes; src/admin (schools, users, clients, Citus) calls it, never the reverse.',
      from: { path: '^src/records/' },
      to: { path: '^src/admin/' }
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that does not resolve would escape the rules above.',
      from: { path: '^src/' },
      to: { couldNotResolve: true }
    }
  ],
  options: {
    // The generated Prisma client (npm run db:generate) is the library's code, not ours.
    exclude: { path: '^src/generated/' },
    doNotFollow: { path: 'node_modules' },
    // Type-only imports count: a cycle of types is a cycle of meaning all the same.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.build.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types']
    }
  }
}
