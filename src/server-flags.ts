// Node's options for the API server process, wherever it is started: `npm start`, the Docker image's
// command, the benchmark and the multi-node test (test/server-flags.test.ts checks that they agree).
//
// A young-generation size can only be set when the process starts, hence options on the command line.
// --max-semi-space-size=8: peak RSS 158 MB against 174-272 MB at 16 (BENCHMARKS.md, "What changed since `1b26f99`").
// --max-old-space-size=512: peak RSS 203 MB against 298 MB without (BENCHMARKS.md, "What changed since `62bf5fa`").
export const SERVER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--max-old-space-size=512']
