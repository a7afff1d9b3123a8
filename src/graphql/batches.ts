// The relations resolved in batches (Classroom.teachers, Teacher.classrooms, Change.student, ...):
// the calls of one field made while a batch waits are read in one statement for all their parents
// (DataLoader, one per field and request). Not Mercurius's loaders: to key a call, those stringify
// the whole parent row with safe-stable-stringify (93 KiB of a `nested` request's 1,455 KiB,
// BENCHMARKS.md, "Allocations per request"), and pass the resolve info (which the statement's
// columns come from) only to a loader without a cache. Here the parent itself is the key, and
// nothing is cached: a mutation's later field reads again what an earlier one wrote.
import DataLoader from 'dataloader'
import type { GraphQLResolveInfo, OperationDefinitionNode } from 'graphql'
import type { MercuriusContext } from 'mercurius'

/** Reads a relation for `parents` (in their order, one answer each) with the columns `info`'s operation selects below the field. */
export type BatchRead<P, R> = (parents: readonly P[], ctx: MercuriusContext, info: GraphQLResolveInfo) => Promise<R[]>

/** A field's resolver that reads `read` once per batch of calls. */
export type BatchedResolver<P, R> = (parent: P, args: unknown, ctx: MercuriusContext, info: GraphQLResolveInfo) => Promise<R>

// Each request's loaders, by operation and field; kept on its context, which lives as long as the
// request (or, for subscriptions, their connection, whose operations differ).
const loadersOf = new WeakMap<MercuriusContext, WeakMap<OperationDefinitionNode, Map<string, DataLoader<unknown, unknown>>>>()

/**
 * The resolver of `field` (`Type.field`) reading through `read` in batches. Every call of one
 * operation selects the same columns below the field (the selection is the operation's, over all
 * the places the field appears: selection.ts, relationSelect), so the first call's resolve info
 * serves the batch of its operation.
 */
export function batched<P, R> (field: string, read: BatchRead<P, R>): BatchedResolver<P, R> {
  // Not an async function: the loader's promise is the answer, without one more around it per call.
  return (parent, _args, ctx, info) => {
    let operations = loadersOf.get(ctx)
    if (operations === undefined) loadersOf.set(ctx, operations = new WeakMap())
    let loaders = operations.get(info.operation)
    if (loaders === undefined) operations.set(info.operation, loaders = new Map<string, DataLoader<unknown, unknown>>())
    let loader = loaders.get(field) as DataLoader<P, R> | undefined
    if (loader === undefined) {
      loader = new DataLoader<P, R>(async (parents) => await read(parents, ctx, info), { cache: false })
      loaders.set(field, loader)
    }
    return loader.load(parent)
  }
}
