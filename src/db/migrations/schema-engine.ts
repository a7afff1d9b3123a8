// Prisma's schema engine (the program behind `prisma migrate`), compiled to WebAssembly.
// Its native binary cannot be downloaded on every machine, so the project drives the
// published WebAssembly build directly, through the same driver adapters the client uses.
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import * as bg from '@prisma/schema-engine-wasm/schema_engine_bg'
import type { SchemaEngine } from '@prisma/schema-engine-wasm'
import { MigrationEngineError } from './errors.js'
import {
  bindMigrationAwareSqlAdapterFactory,
  type SqlMigrationAwareDriverAdapterFactory
} from '@prisma/driver-adapter-utils'

export type { SchemaEngine }

/** The engine reports a Rust panic through this global before it throws. */
interface PanicRegistry { set_message (message: string): void, message?: string }
declare global {

  var PRISMA_WASM_PANIC_REGISTRY: PanicRegistry | undefined
}

// The WebAssembly API is a global of Node; TypeScript declares it only in the DOM library.
interface WasmApi {
  instantiate (bytes: Uint8Array, imports: Record<string, unknown>): Promise<{ instance: { exports: Record<string, unknown> } }>
  RuntimeError: new () => Error
}
const { WebAssembly } = globalThis as unknown as { WebAssembly: WasmApi }

let loaded: Promise<typeof bg> | undefined

/** Instantiates the WebAssembly module once per process. */
async function loadWasm (): Promise<typeof bg> {
  loaded ??= (async () => {
    globalThis.PRISMA_WASM_PANIC_REGISTRY ??= {
      set_message (message: string) { this.message = message }
    }
    // The .wasm file is not an export of the package; it sits beside the resolvable JS glue.
    const require = createRequire(import.meta.url)
    const wasmPath = join(dirname(require.resolve('@prisma/schema-engine-wasm/schema_engine_bg')), 'schema_engine_bg.wasm')
    const { instance } = await WebAssembly.instantiate(await readFile(wasmPath), {
      './schema_engine_bg.js': bg
    })
    const exports = instance.exports as { __wbindgen_start (): void }
    bg.__wbg_set_wasm(exports)
    exports.__wbindgen_start()
    return bg
  })()
  return await loaded
}

export { MigrationEngineError }

/** The engine's errors are plain objects or panics; give them a readable message. */
export function engineError (err: unknown): MigrationEngineError {
  const panic = globalThis.PRISMA_WASM_PANIC_REGISTRY?.message
  if (err instanceof WebAssembly.RuntimeError && panic !== undefined) {
    return new MigrationEngineError(`Schema engine panicked: ${panic}`)
  }
  if (err instanceof Error) return new MigrationEngineError(err.message, { cause: err })
  if (typeof err === 'object' && err !== null && 'message' in err) {
    return new MigrationEngineError(String((err).message), { cause: err })
  }
  return new MigrationEngineError(String(err))
}

export interface EngineOptions {
  /** The Prisma schema as `[fileName, text]`; the engine needs it for diffs and new migrations. */
  schema?: [string, string]
  /** Receives the engine's log lines (JSON strings). */
  log?: (line: string) => void
}

/** Runs `work` with an engine connected through `adapterFactory`, then frees the engine. */
export async function withSchemaEngine<T> (
  adapterFactory: SqlMigrationAwareDriverAdapterFactory & { close (): Promise<void> },
  options: EngineOptions,
  work: (engine: SchemaEngine) => Promise<T>
): Promise<T> {
  const wasm = await loadWasm()
  let engine: SchemaEngine
  try {
    engine = await wasm.SchemaEngine.new(
      { datamodels: options.schema === undefined ? undefined : [options.schema] },
      options.log ?? (() => {}),
      bindMigrationAwareSqlAdapterFactory(adapterFactory)
    )
  } catch (err) {
    await adapterFactory.close()
    throw engineError(err)
  }
  try {
    return await work(engine)
  } catch (err) {
    throw engineError(err)
  } finally {
    engine.free()
    await adapterFactory.close()
  }
}
