// Preloaded into a bench server (`node --import ./bench/heap-sampling.mjs`) by bench/allocations.mjs:
// V8's sampling heap profiler over a window the runner opens and closes with SIGUSR2, counting
// every sampled allocation, including the objects the garbage collector has already taken back
// (node --heap-prof keeps only those still alive at its end, which says nothing of the garbage a
// request leaves). The profile is written to HEAP_SAMPLING_FILE when the window closes.
import { Session } from 'node:inspector/promises'
import { writeFileSync } from 'node:fs'

const file = process.env.HEAP_SAMPLING_FILE
if (file === undefined) throw new Error('bench/heap-sampling.mjs: HEAP_SAMPLING_FILE is not set')
// One sample per 4 KiB allocated on average (V8's default is 32 KiB): enough samples in a window
// of some thousands of requests to rank the allocating functions.
const samplingInterval = Number(process.env.HEAP_SAMPLING_INTERVAL ?? 4096)

const session = new Session()
session.connect()
let sampling = false
process.on('SIGUSR2', () => {
  const step = sampling
    ? session.post('HeapProfiler.stopSampling').then(({ profile }) => writeFileSync(file, JSON.stringify(profile)))
    : session.post('HeapProfiler.startSampling', { samplingInterval, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true })
  sampling = !sampling
  step.then(() => process.stderr.write(`heap-sampling: ${sampling ? 'started' : `written to ${file}`}\n`), (err) => process.stderr.write(`heap-sampling: ${err.message}\n`))
})
await session.post('HeapProfiler.enable')
