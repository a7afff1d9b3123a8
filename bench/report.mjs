// Renders a benchmark result (the object written to bench/results/latest.json) as Markdown and
// as an SVG bar chart (hand-written: no browser or chart library needed).
import { ELSEWHERE, LAYERS } from './layers.mjs'
import { formatSpread, roundRatios } from './rounds.mjs'

const fmt = (n, digits = 0) => Number.isFinite(n) ? n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : 'n/a'
// Latencies: autocannon's are whole milliseconds mostly; show a decimal only when there is one.
const ms = (n) => Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: 1 }) : 'n/a'
const pct = (n) => Number.isFinite(n) ? `${(n * 100).toFixed(1)}%` : 'n/a'

export const TARGET_LABELS = {
  service: 'service (RLS role, response cache on)',
  uncached: 'service (RLS role, cache off)',
  superuser: 'service (superuser, cache off)',
  'service-2': 'two service processes (RLS role, cache on)',
  'uncached-2': 'two service processes (RLS role, cache off)',
  ceiling: 'ceiling',
  'mercurius-pg': 'Fastify + Mercurius + pg (the same GraphQL stack, no Prisma, no walls)',
  prisma: 'Prisma floor (ceiling server, one Prisma operation)',
  'prisma-raw': 'Prisma raw-SQL floor (ceiling server, the ceiling\'s SQL through $queryRawUnsafe)'
}

export function renderMarkdown (r) {
  const lines = []
  lines.push(`# Benchmark results (${r.finishedAt})`, '')
  lines.push(`Commit ${r.git.commit}${r.git.dirty ? ' (with uncommitted changes)' : ''}; ${r.settings.connections} connections, ` +
    `${r.settings.durationSeconds} s per workload after a ${r.settings.warmupSeconds} s warm-up; ` +
    `${r.dataset.counts.schools} schools, ${fmt(r.dataset.counts.students)} students, ${fmt(r.dataset.counts.teachers)} teachers, ` +
    `${fmt(r.dataset.counts.classrooms)} classrooms, ${fmt(r.dataset.counts.teacher_classrooms)} teacher-classroom assignments.`, '')
  lines.push(`Machine: ${r.machine.cpus} CPU (${r.machine.cpuModel}), ${fmt(r.machine.memoryMb)} MB RAM, ` +
    `Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}. Load generator, service and PostgreSQL share the machine.` +
    (r.settings.profile ? ' CPU profiling was on (BENCH_PROFILE=1): figures are lower than usual.' : ''), '')
  lines.push('| Workload | Server | req/s | p50 ms | p99 ms | errors / non-2xx / wrong | peak RSS MB | CPU cores: server / PostgreSQL / load gen / other | CPU µs per request: server / PostgreSQL | vs ceiling |')
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|')
  for (const row of r.runs) {
    lines.push(`| ${row.workload} | ${TARGET_LABELS[row.target]}${row.comparison === 'rls' ? ' [RLS comparison]' : ''} | ${fmt(row.rps)} | ${ms(row.p50)} | ${ms(row.p99)} | ` +
      `${row.errors + row.timeouts} / ${row.non2xx} / ${row.wrong} | ${fmt(row.peakRssMb, 0)} | ` +
      `${fmt(row.cpuCores, 2)} / ${fmt(row.postgresCores, 2)} / ${fmt(row.loadGenCores, 2)} / ${fmt(Math.max(0, row.otherCores), 2)} | ` +
      `${fmt(row.serverCpuUsPerRequest, 0)} / ${fmt(row.postgresCpuUsPerRequest, 0)} | ` +
      `${row.target === 'ceiling' ? '' : (Number.isFinite(row.ceilingRatio) ? fmt(row.ceilingRatio, 2) + '×' + (row.versus?.target === 'ceiling' ? ' (median)' : '') : '')} |`)
  }
  lines.push('')
  if (r.comparisons?.length > 0) {
    lines.push(`Rows of the interleaved comparisons (every server of a workload measured in turn, ${r.settings.rounds} rounds of ${r.settings.roundSeconds} s ` +
      `after a ${r.settings.roundLeadSeconds} s lead-in each): medians over the rounds; their CPU cores are means, their errors and answers sums. ` +
      '"vs ceiling" of those marked "(median)" is the median of the rounds\' ratios (the spread is under "Interleaved rounds"); ' +
      'of the others, the ratio to the ceiling\'s median, measured at another time.', '')
  }
  lines.push('CPU: cores used during the measured window by the server process, by the PostgreSQL backends of the bench ' +
    'database, by the load generator (autocannon and the answer checks, in the runner), and by anything else on the machine. ' +
    'CPU µs per request: the server\'s and the PostgreSQL backends\' CPU time in the window over the requests answered in it ' +
    '(a cost, which the machine\'s load disturbs less than req/s).')
  // What Prisma alone costs: its floor against the ceiling, and the service against its floor.
  const floors = r.runs.filter((row) => row.target === 'prisma')
  if (floors.length > 0) {
    const against = (workload, target) => r.runs.find((row) => row.workload === workload && row.target === target)
    lines.push('', 'Prisma floor (`bench/prisma-minimal.mjs`: the ceiling\'s server answering with one Prisma operation per request, ' +
      'no GraphQL, walls, audit or rate limits): ' + floors.map((row) => {
      const uncached = against(row.workload, 'uncached')
      const versusFloor = uncached?.rounds !== undefined && row.rounds !== undefined ? roundRatios(uncached, row).median : uncached?.rps / row.rps
      return `${row.workload} ${fmt(row.ceilingRatio, 2)}× the ceiling` +
        (uncached !== undefined ? ` (the uncached service: ${fmt(versusFloor, 2)}× the floor)` : '')
    }).join('; ') + '.')
    const raw = r.runs.filter((row) => row.target === 'prisma-raw')
    if (raw.length > 0) {
      lines.push('', 'Prisma raw-SQL floor (the same server sending the ceiling\'s SQL through `$queryRawUnsafe`, the path of Prisma\'s typed SQL): ' +
        raw.map((row) => `${row.workload} ${fmt(row.ceilingRatio, 2)}× the ceiling`).join('; ') + '.')
    }
  }
  const repeated = r.runs.filter((row) => row.attempts > 1)
  if (repeated.length > 0) {
    lines.push(`Measured again because other programs were busy: ${repeated.map((row) => `${row.workload} (${TARGET_LABELS[row.target]}, ${row.attempts} attempts)`).join(', ')}; the least disturbed attempt is shown.`)
  }
  const interleaved = r.runs.filter((row) => row.rounds !== undefined)
  if (interleaved.length > 0) {
    const rounds = interleaved.reduce((n, row) => n + row.rounds.length, 0)
    const disturbedRounds = interleaved.reduce((n, row) => n + row.disturbedRounds, 0)
    lines.push(`Rounds of the interleaved comparisons during which other programs used more than ${r.settings.disturbedCores} cores: ${disturbedRounds} of ${rounds}` +
      (disturbedRounds > 0 ? ' (their servers\' ratios share that load, which the medians over the rounds absorb; the CPU per request is the steadier figure).' : '.'))
  }
  const disturbed = r.runs.filter((row) => row.rounds === undefined && row.otherCores > r.settings.disturbedCores)
  if (disturbed.length > 0) {
    lines.push(`**Disturbed**: other processes used more than ${r.settings.disturbedCores} cores during ` +
      `${disturbed.map((row) => `${row.workload} (${TARGET_LABELS[row.target]})`).join(', ')}; rerun on a quiet machine for reliable figures.`)
  }
  lines.push('')
  lines.push(`Ready (process start to first 200 from /ready): service ${fmt(r.ready.service)} ms` +
    (r.ready.superuser !== undefined ? `, service as superuser ${fmt(r.ready.superuser)} ms` : '') +
    (r.ready.ceiling !== undefined ? `, ceiling ${fmt(r.ready.ceiling)} ms` : '') + '.')
  lines.push(`Peak RSS over the whole run (VmHWM): service ${fmt(r.peakRssMb.service)} MB` +
    (r.peakRssMb.superuser !== undefined ? `, service as superuser ${fmt(r.peakRssMb.superuser)} MB` : '') +
    (r.peakRssMb.ceiling !== undefined ? `, ceiling ${fmt(r.peakRssMb.ceiling)} MB` : '') + '.')
  lines.push(`Pool: ${r.pool.note} Most connections the service held during a workload: ${r.pool.observedMax ?? 'n/a'}.`)
  lines.push(`Row-level security: ${r.rls.summary}`)
  if (r.modes?.superuser !== undefined && r.modes.superuser !== 'production') {
    lines.push(`The superuser comparison ran in ${r.modes.superuser} mode: production mode refuses a role that bypasses row-level security.`)
  }
  for (const [workload, cost] of Object.entries(r.rls.cost)) {
    const s = r.rls.spread?.[workload]
    lines.push(`Row-level security cost (${workload}): ${pct(cost)}` + (s === undefined ? '' : ` (median of ${s.n} interleaved rounds; ${pct(s.min)} to ${pct(s.max)})`))
  }
  for (const [workload, detail] of Object.entries(r.callers?.detail ?? {})) {
    const [caller, page] = workload.split('-')
    lines.push(`${caller === 'teacher' ? 'A teacher (two classrooms\' students)' : 'A client (roster-core.readonly)'}, ${page}, cache off: ${detail}.`)
  }
  for (const w of r.walks ?? []) {
    lines.push(`Full walk (${w.walk}, issue 37): ${fmt(w.studentsPerWalk, 0)} students in ${fmt(w.pagesPerWalk, 0)} pages of up to 1000, ` +
      `${fmt(w.wallMsPerWalk, 0)} ms wall, server CPU ${fmt(w.serverCpuMsPerWalk, 0)} ms, PostgreSQL ${fmt(w.postgresCpuMsPerWalk, 0)} ms per walk (mean of ${w.walks}).`)
  }
  for (const [target, ratio] of Object.entries(r.scaling ?? {})) {
    lines.push(`${TARGET_LABELS[target]} vs one process, flat: ${fmt(ratio, 2)}× the requests per second ` +
      '(the load generator, the processes and PostgreSQL share this machine\'s cores).')
  }
  lines.push(...comparisonMarkdown(r))
  lines.push(...layersMarkdown(r))
  lines.push('', '## Targets', '')
  for (const t of r.targets) lines.push(`- ${t.status} ${t.name}: ${t.detail}`)
  lines.push('', '## Correctness', '', r.correct
    ? `Every response was checked (${fmt(r.checkedResponses)} in all): the exact expected page of the token's caller (its school's; a teacher's, of the teacher's classrooms), or tokens of the right user or client.`
    : `FAILED: ${r.failures.map((f) => `${f.workload} on ${TARGET_LABELS[f.target]}: ${f.message}`).join('; ')}`)
  return lines.join('\n') + '\n'
}

/** Lanes of the interleaved comparisons: each against its reference, round by round. */
function comparisonMarkdown (r) {
  const comparisons = r.comparisons ?? []
  if (comparisons.length === 0) return []
  const rowOf = (c, lane) => r.runs.find((row) => row.comparison === c.name && row.target === lane.target && row.workload === lane.workload)
  const lines = ['', '## Interleaved rounds', '',
    `Each workload's servers measured in turn, ${r.settings.rounds} rounds of ${r.settings.roundSeconds} s each (in an order that changes from round to round, after the previous server has settled), ` +
    'so that every round compares servers under the same load of the machine. Ratios are taken round by round, then summarized: ' +
    'median (min–max over the rounds, quartiles).', '',
    '| Workload | Server | req/s | ÷ reference, req/s | server CPU µs per request | ÷ reference, CPU per request | PostgreSQL µs per request | rounds disturbed |',
    '|---|---|---:|---|---:|---|---:|---:|']
  for (const c of comparisons) {
    for (const lane of c.lanes) {
      const row = rowOf(c, lane)
      if (row === undefined) continue
      const name = lane.workload === c.workload ? lane.workload : `${lane.workload} (beside ${c.workload})`
      const reference = row.target === c.reference && row.workload === c.workload
      const label = `${TARGET_LABELS[row.target]}${reference ? ': the reference' : ''}${c.name === 'rls' ? ' [RLS comparison]' : ''}`
      lines.push(`| ${name} | ${label} | ${fmt(row.rps)} | ${reference ? '' : formatSpread(row.versus?.rps ?? row.adminSpread)} | ` +
        `${fmt(row.serverCpuUsPerRequest)} | ${reference ? '' : formatSpread(row.versus?.cpu ?? row.adminCpu)} | ${fmt(row.postgresCpuUsPerRequest)} | ${row.disturbedRounds ?? 0} |`)
    }
  }
  lines.push('', 'The reference of the fresh reads is the ceiling; of the RLS comparison, the service as the superuser; a teacher\'s and a client\'s flat page ' +
    'are compared with the administrator\'s flat page of the same rounds. A round is disturbed when other programs used more than ' +
    `${r.settings.disturbedCores} cores during it.`)
  return lines
}

// Servers in the order of the layer tables' columns.
const LAYER_COLUMNS = ['uncached', 'service', 'superuser', 'mercurius-pg', 'prisma', 'prisma-raw', 'ceiling']

/** Per workload, server CPU per request by layer of each profiled server (bench/layers.mjs). */
function layersMarkdown (r) {
  if (!(r.layers?.length > 0)) return []
  const lines = ['', '## Server CPU per request by layer', '',
    'Each profiled server\'s samples in the measured windows of the workload, charged to the innermost frame of a layer ' +
    '(bench/layers.mjs), times its CPU per request (median over the rounds): µs of server CPU per request, and the share of the samples.']
  for (const workload of [...new Set(r.layers.map((l) => l.workload))]) {
    const columns = r.layers.filter((l) => l.workload === workload)
      .sort((a, b) => LAYER_COLUMNS.indexOf(a.target) - LAYER_COLUMNS.indexOf(b.target))
    lines.push('', `### ${workload}`, '',
      `| layer | ${columns.map((c) => TARGET_LABELS[c.target]).join(' | ')} |`,
      `|---|${columns.map(() => '---:').join('|')}|`)
    for (const layer of LAYERS) {
      const cells = columns.map((c) => c.layers.find((l) => l.layer === layer))
      if (cells.every((cell) => !(cell?.share >= 0.0005))) continue
      lines.push(`| ${layer} | ${cells.map((cell) => cell.samples === 0 ? '' : `${fmt(cell.us)} (${pct(cell.share)})`).join(' | ')} |`)
    }
    lines.push(`| **server CPU per request** | ${columns.map((c) => `**${fmt(c.cpuUsPerRequest)}**`).join(' | ')} |`)
    lines.push(`| samples (idle left out) | ${columns.map((c) => fmt(c.samples)).join(' | ')} |`)
    for (const c of columns.filter((c) => c.elsewhere.length > 0 && (c.target === 'uncached' || c.target === 'service'))) {
      const shown = c.elsewhere.slice(0, 8)
      lines.push('', `"${ELSEWHERE}" of ${TARGET_LABELS[c.target]}, ${workload}: ` +
        shown.map((e) => `${e.where} ${fmt(e.us)} µs`).join('; ') + (c.elsewhere.length > shown.length ? `; ${c.elsewhere.length - shown.length} more` : '') + '.')
    }
  }
  return lines
}

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')

const COLORS = { service: '#2f6db5', uncached: '#5b9bd5', superuser: '#8fb3e0', 'mercurius-pg': '#6aa84f', prisma: '#d9a441', 'prisma-raw': '#f0c987', ceiling: '#b0b0b0' }

/** Horizontal grouped bars: req/s of each workload, one bar per server that ran it. */
export function renderSvg (r) {
  const workloads = [...new Set(r.runs.map((row) => row.workload))]
  const targets = ['service', 'uncached', 'superuser', 'mercurius-pg', 'prisma', 'prisma-raw', 'ceiling']
  const max = Math.max(...r.runs.map((row) => row.rps).filter(Number.isFinite), 1)
  const left = 150
  const barMax = 520
  const barH = 18
  const gap = 4
  const groupGap = 18
  const top = 70
  let y = top
  const parts = []
  for (const workload of workloads) {
    const rows = targets.map((t) => r.runs.find((row) => row.workload === workload && row.target === t)).filter(Boolean)
    const groupH = rows.length * (barH + gap) - gap
    parts.push(`<text x="${left - 10}" y="${y + groupH / 2 + 5}" text-anchor="end" font-weight="bold">${esc(workload)}</text>`)
    for (const row of rows) {
      const w = Math.max(1, (row.rps / max) * barMax)
      parts.push(`<rect x="${left}" y="${y}" width="${w.toFixed(1)}" height="${barH}" fill="${COLORS[row.target]}"/>`)
      const ratio = Number.isFinite(row.ceilingRatio) ? ` (${fmt(row.ceilingRatio, 2)}× ceiling)` : ''
      const label = `${fmt(row.rps)} req/s${ratio} · p50 ${ms(row.p50)} ms · p99 ${ms(row.p99)} ms`
      parts.push(`<text x="${(left + w + 6).toFixed(1)}" y="${y + barH - 5}" font-size="11">${esc(label)}</text>`)
      y += barH + gap
    }
    y += groupGap - gap
  }
  const legendY = y + 10
  targets.forEach((t, i) => {
    const x = left + (i % 2) * 320
    const ly = legendY + Math.floor(i / 2) * 20
    parts.push(`<rect x="${x}" y="${ly}" width="12" height="12" fill="${COLORS[t]}"/>`)
    parts.push(`<text x="${x + 18}" y="${ly + 11}" font-size="12">${esc(TARGET_LABELS[t])}</text>`)
  })
  const height = legendY + 60
  const width = left + barMax + 280
  const subtitle = `${r.settings.connections} connections, ${r.settings.durationSeconds} s each; ${r.machine.cpus} CPU, Node ${r.machine.node}, PostgreSQL ${r.machine.postgres}; ${r.finishedAt.slice(0, 10)}`
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="13">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="20" y="28" font-size="17" font-weight="bold">School Data Service: requests per second (higher is better)</text>
<text x="20" y="48" font-size="12" fill="#555555">${esc(subtitle)}</text>
<line x1="${left}" y1="${top - 6}" x2="${left}" y2="${y - groupGap + 6}" stroke="#333333"/>
${parts.join('\n')}
</svg>
`
}
