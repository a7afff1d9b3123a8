// A V8 CPU profile (.cpuprofile, written by node --cpu-prof) summed by where the time went: each
// npm package, Node.js itself, the service's own code, WebAssembly, the garbage collector. Self
// time only (a function's own samples, not its callees'), so the rows add up to the whole. By
// layer of the request path instead: bench/layers.mjs.
import { readFileSync } from 'node:fs'
import { inWindows, sampleTimes } from './layers.mjs'

/** The group a sampled function belongs to, from its script's URL. */
export function groupOf (callFrame, projectDir) {
  const { url, functionName } = callFrame
  if (url === '') {
    // V8's own entries: (garbage collector), (program), (idle), (root); else built-in functions
    // and bindings (JSON, socket writes, crypto...).
    return functionName.startsWith('(') ? functionName : '(built-ins and bindings)'
  }
  if (url.startsWith('wasm://')) return 'WebAssembly'
  if (url.startsWith('node:')) return 'Node.js'
  const path = decodeURIComponent(url.replace(/^file:\/\//, ''))
  const at = path.lastIndexOf('/node_modules/')
  if (at !== -1) {
    const [scope, name] = path.slice(at + '/node_modules/'.length).split('/')
    return scope.startsWith('@') ? `${scope}/${name}` : scope
  }
  if (path.startsWith(projectDir)) {
    const [top, next] = path.slice(projectDir.length).replace(/^\//, '').split('/')
    // dist/<folder>/... for the service, bench/... for the ceiling.
    return top === 'dist' && next !== undefined && !next.endsWith('.js') ? `service: ${next}` : `project: ${top}`
  }
  return 'other'
}

/**
 * Microseconds of self time by group, idle left out, largest first; only the samples within
 * `windows` when given (see bench/layers.mjs).
 */
export function summarize (profile, projectDir, windows) {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]))
  const times = sampleTimes(profile)
  const self = new Map()
  profile.samples.forEach((id, i) => {
    if (inWindows(times[i], windows)) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  const groups = new Map()
  for (const [id, us] of self) {
    const group = groupOf(nodes.get(id).callFrame, projectDir)
    if (group === '(idle)') continue
    groups.set(group, (groups.get(group) ?? 0) + us)
  }
  const total = [...groups.values()].reduce((a, b) => a + b, 0)
  return { totalUs: total, rows: [...groups].sort((a, b) => b[1] - a[1]).map(([group, us]) => ({ group, us, share: us / total })) }
}

/** A Markdown table of the summary of the profile in `file` (within `windows` when given). */
export function summaryMarkdown (file, projectDir, windows) {
  const { totalUs, rows } = summarize(JSON.parse(readFileSync(file, 'utf8')), projectDir, windows)
  const lines = [`CPU time by package (self time, idle excluded): ${(totalUs / 1e6).toFixed(2)} s in all.`, '',
    '| where | CPU s | share |', '|---|---:|---:|']
  const shown = rows.filter((row) => row.share >= 0.005)
  for (const row of shown) lines.push(`| ${row.group} | ${(row.us / 1e6).toFixed(2)} | ${(row.share * 100).toFixed(1)}% |`)
  const rest = rows.slice(shown.length)
  if (rest.length > 0) {
    const us = rest.reduce((n, row) => n + row.us, 0)
    lines.push(`| ${rest.length} more, under 0.5% each | ${(us / 1e6).toFixed(2)} | ${(us / totalUs * 100).toFixed(1)}% |`)
  }
  return lines.join('\n') + '\n'
}
