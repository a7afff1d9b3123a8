// Used by `prisma generate` (npm run db:generate). Migrations are run by the project's own
// runner on Prisma's WebAssembly schema engine (src/db/migrations), which reads the same paths.
import { defineConfig } from 'prisma/config'

export default defineConfig({
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations' }
})
