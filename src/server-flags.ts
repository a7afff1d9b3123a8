// Node's options for the API server process, wherever it is started: `npm start`, the Docker image's
// command, the benchmark and the multi-node test (test/server-flags.test.ts checks that they agree).
//
// --max-semi-space-size=8: V8's young generation at 8 MB per semi-space instead of 16. Most of what
// a request allocates dies young either way; with half the nursery, the server's peak resident
// memory under load is about 40 MB lower for the same requests per second (BENCHMARKS.md). A
// young-generation size can only be set when the process starts, hence a command-line option and
// not a setting of the server's own (V8's WebAssembly tier is set in src/server.ts instead).
//
// --max-old-space-size=512: a bound on V8's heap, 12 times what the server keeps alive under load
// (about 40 MB), which also sets how far the heap may grow before a full collection. Without it, on
// a machine with much memory, V8 lets the old generation grow to about four times the live heap
// between full collections: garbage that outlived the young generation (answers in flight, the
// access audit's queue) then held 100 MB more. Measured: the benchmark's workloads one after the
// other peaked at 298 MB of RSS without it, 203 MB with it, at the same requests per second.
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--max-old-space-size=512']
