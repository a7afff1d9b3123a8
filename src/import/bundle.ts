// A OneRoster CSV bundle, from a folder or a zip file: its files' text, parsed into rows that keep
// their line numbers (a bad row is reported as file:line).
import { readFile, readdir, stat } from 'node:fs/promises'
import { basename, join } from 'node:path'
import { parse } from 'csv-parse/sync'
import { unzipSync, strFromU8 } from 'fflate'
import { isStorableText, NUL_REFUSED } from '../validators.js'

export class ImportError extends Error {
  override name = 'ImportError'
  constructor (readonly file: string, readonly line: number | undefined, readonly reason: string) {
    super(line === undefined ? `${file}: ${reason}` : `${file}:${line}: ${reason}`)
  }
}

/** A record of a CSV file and the line it starts on (the header is line 1). */
export class Row {
  constructor (readonly file: string, readonly line: number, private readonly record: string[], private readonly index: Map<string, number>) {}
  /**
   * The trimmed value of a column; '' when the file has no such column. Every value the import uses
   * passes here: one PostgreSQL cannot store is refused (a column the import ignores may hold anything).
   */
  get (column: string): string {
    const i = this.index.get(column)
    const value = i === undefined ? '' : (this.record[i] ?? '').trim()
    if (!isStorableText(value)) throw new ImportError(this.file, this.line, `column "${column}" ${NUL_REFUSED}`)
    return value
  }
}

export interface Table {
  file: string
  columns: Set<string>
  rows: Row[]
}

/** The bundle's files by lower-cased name (`users.csv`), read as UTF-8. */
export type Bundle = Map<string, string>

export async function readBundle (path: string): Promise<Bundle> {
  let info
  try {
    info = await stat(path)
  } catch {
    throw new ImportError(path, undefined, 'no such file or folder')
  }
  const files: Bundle = new Map()
  if (info.isDirectory()) {
    for (const name of await readdir(path)) {
      if (name.toLowerCase().endsWith('.csv')) files.set(name.toLowerCase(), await readFile(join(path, name), 'utf8'))
    }
    return files
  }
  let entries: Record<string, Uint8Array>
  try {
    // Only the CSV files are inflated; a bundle is a few files of text.
    entries = unzipSync(await readFile(path), { filter: (file) => file.name.toLowerCase().endsWith('.csv') })
  } catch (err) {
    throw new ImportError(basename(path), undefined, `not a folder nor a readable zip file (${(err as Error).message})`)
  }
  for (const [name, data] of Object.entries(entries)) {
    // Zips made by "compress folder" keep the folder in each name; the files are what count.
    if (name.startsWith('__MACOSX/')) continue
    files.set(basename(name).toLowerCase(), strFromU8(data))
  }
  return files
}

/** Parses one CSV file of the bundle; undefined when the bundle has no such file. */
export function readTable (bundle: Bundle, file: string, required: string[]): Table | undefined {
  const text = bundle.get(file.toLowerCase())
  if (text === undefined) return undefined
  const records = parseCsv(file, text, false)
  // Line numbers: when no line break is inside a quoted field, the records are the file's non-empty
  // lines in order (cheap to count); otherwise csv-parse tells each record's last line (slower).
  const simple = recordLines(text)
  let lines: number[]
  if (simple !== undefined && simple.length === records.length) {
    lines = simple
  } else {
    const ends = parseCsv(file, text, true) as unknown as Array<[...string[], string]>
    lines = ends.map((record, i) => Number(record.at(-1)) - countNewlines(records[i]!))
  }
  const [header, ...body] = records
  if (header === undefined) throw new ImportError(file, 1, 'the file is empty (a header line is required)')
  const names = header.map((name) => name.trim())
  const index = new Map<string, number>()
  names.forEach((name, i) => { if (!index.has(name)) index.set(name, i) })
  for (const column of required) {
    if (!index.has(column)) throw new ImportError(file, lines[0], `missing column "${column}"`)
  }
  const rows = body.map((record, i) => new Row(file, lines[i + 1]!, record, index))
  return { file, columns: new Set(names), rows }
}

function parseCsv (file: string, text: string, withLines: boolean): string[][] {
  try {
    const records: string[][] = parse(text, {
      bom: true,
      skip_empty_lines: true,
      // The line each record ends on, appended to it.
      ...(withLines && { on_record: (record: string[], context: { lines: number }) => [...record, String(context.lines)] })
    })
    return records
  } catch (err) {
    const e = err as Error & { lines?: number }
    throw new ImportError(file, e.lines, `not valid CSV: ${e.message.replace(/^Invalid [^:]*: /, '')}`)
  }
}

/**
 * The numbers of the non-empty lines, when every line has an even number of quotes (so no quoted
 * field spans lines); undefined otherwise.
 */
function recordLines (text: string): number[] | undefined {
  const lines: number[] = []
  let line = 0
  for (let start = 0; start < text.length;) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    line += 1
    let quotes = 0
    let blank = true
    for (let i = start; i < end; i++) {
      const c = text.charCodeAt(i)
      if (c === 34) quotes += 1
      if (blank && c !== 13 && c !== 32 && c !== 9 && c !== 0xfeff) blank = false
    }
    if (quotes % 2 === 1) return undefined
    if (!blank) lines.push(line)
    start = end + 1
  }
  return lines
}

function countNewlines (record: string[]): number {
  let n = 0
  for (const field of record) {
    for (let i = field.indexOf('\n'); i !== -1; i = field.indexOf('\n', i + 1)) n += 1
  }
  return n
}
