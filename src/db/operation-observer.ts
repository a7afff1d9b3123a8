// A step of the school client (school-client.ts) that shows each operation's result to whoever
// observes the current request: the access audit's tally (src/audit/access.ts), which counts the
// Student and Teacher records the operation handed over. This layer knows nothing of what is
// counted; the observer is set around a request by its owner (src/audit/plugin.ts), and no
// operation outside one (the CLI, tests) is observed.
import { AsyncLocalStorage } from 'node:async_hooks'
import { Prisma } from '../generated/prisma/client.js'
import { operationOf, registeredStatement } from './typed-reads.js'

export interface OperationObserver {
  /** `operation` of `model` in `schoolId` answered `result` (rows, a row, null or a count). */
  observe (schoolId: string, model: string, operation: string, result: unknown): void
}

/** The observer of the operations run in this async context, if any. */
export const operationObserver = new AsyncLocalStorage<OperationObserver>()

/** The step: every operation of a model, once it has answered, shown to the current observer. */
export function operationsObserved (schoolId: string) {
  return Prisma.defineExtension({
    name: 'operations-observed',
    query: {
      $allOperations ({ model, operation, args, query }) {
        const observer = operationObserver.getStore()
        if (observer === undefined) return query(args)
        // A typed statement hands over rows of its model, as the operation it stands for would: a
        // read as a findMany (typed-reads.ts), a bulk upsert's write as a createManyAndReturn or
        // updateManyAndReturn (typed-writes.ts).
        const typed = model === undefined ? registeredStatement((args as unknown[] | undefined)?.[0]) : undefined
        const observed = model ?? typed?.model
        if (observed === undefined) return query(args)
        const as = typed === undefined ? operation : operationOf(typed)
        return query(args).then((result: unknown) => {
          observer.observe(schoolId, observed, as, result)
          return result
        })
      }
    }
  })
}
