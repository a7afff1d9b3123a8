// Whether a database is a Citus coordinator: one statement, for the pool, the migrations and the
// distribution alike (kept apart so that the migrations load no Prisma client for it).
export const CITUS_CHECK = "SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') AS citus"
