// The interleaved comparison's arithmetic: servers measured in short rounds one after another, each
// round's figures compared within the round (the machine's load changes from minute to minute, and
// both servers of a round share it), then summarized by the median and the spread over the rounds.
// bench/run.mjs runs the rounds; bench/report.mjs prints these figures.

/** The q-quantile of `values` (linear between neighbours); NaN for none. */
export function quantile (values, q) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (sorted.length === 0) return NaN
  const at = (sorted.length - 1) * q
  const low = Math.floor(at)
  const high = Math.ceil(at)
  return sorted[low] + (sorted[high] - sorted[low]) * (at - low)
}

export const median = (values) => quantile(values, 0.5)

/** Median, quartiles and extremes of `values`. */
export function spread (values) {
  const finite = values.filter(Number.isFinite)
  return {
    median: median(finite),
    q1: quantile(finite, 0.25),
    q3: quantile(finite, 0.75),
    min: finite.length === 0 ? NaN : Math.min(...finite),
    max: finite.length === 0 ? NaN : Math.max(...finite),
    n: finite.length
  }
}

/** Round by round, `of(a) / of(b)` of two lanes measured in the same rounds, and its spread. */
export function roundRatios (a, b, of = (row) => row.rps) {
  const values = a.rounds.map((row, i) => b.rounds[i] === undefined ? NaN : of(row) / of(b.rounds[i]))
  return { values, ...spread(values) }
}

const sum = (rows, key) => rows.reduce((n, row) => n + (row[key] ?? 0), 0)

/**
 * One row for a lane from its rounds' rows: the median of req/s, latencies and CPU per request, the
 * sums of requests and of errors and answers checked, the largest RSS, the mean core use; the
 * rounds themselves and every measured window (for the CPU profile) kept with it.
 */
export function laneRow (rounds) {
  const pick = (key) => median(rounds.map((row) => row[key]))
  const mean = (key) => sum(rounds, key) / rounds.length
  return {
    workload: rounds[0].workload,
    target: rounds[0].target,
    rps: pick('rps'),
    requests: sum(rounds, 'requests'),
    p50: pick('p50'),
    p90: pick('p90'),
    p99: pick('p99'),
    maxLatency: Math.max(...rounds.map((row) => row.maxLatency)),
    errors: sum(rounds, 'errors'),
    timeouts: sum(rounds, 'timeouts'),
    non2xx: sum(rounds, 'non2xx'),
    wrong: sum(rounds, 'wrong'),
    checked: sum(rounds, 'checked'),
    peakRssMb: Math.max(...rounds.map((row) => row.peakRssMb)),
    cpuCores: mean('cpuCores'),
    loadGenCores: mean('loadGenCores'),
    postgresCores: mean('postgresCores'),
    serverCpuUsPerRequest: pick('serverCpuUsPerRequest'),
    postgresCpuUsPerRequest: pick('postgresCpuUsPerRequest'),
    machineCpuBusy: mean('machineCpuBusy'),
    otherCores: mean('otherCores'),
    dbConnections: Math.max(0, ...rounds.map((row) => row.dbConnections ?? 0)),
    disturbedRounds: rounds.filter((row) => row.disturbed).length,
    windows: rounds.flatMap((row) => row.windows),
    rounds: rounds.map(({ windows, ...row }) => row)
  }
}

/** `0.41 (0.35–0.47 over 5 rounds, quartiles 0.38–0.44)`; `n/a` for none. */
export function formatSpread (s, digits = 2) {
  if (s === undefined || !Number.isFinite(s.median)) return 'n/a'
  const f = (n) => n.toFixed(digits)
  return `${f(s.median)} (${f(s.min)}–${f(s.max)} over ${s.n} rounds, quartiles ${f(s.q1)}–${f(s.q3)})`
}
