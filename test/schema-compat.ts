// The breaking-change check: the current schema against the last released SDL
// (api/schema.released.graphql), by @graphql-inspector/core's diff. A breaking change passes only
// when CHANGELOG.md announces it as its head says: a bullet of the Unreleased section that begins
// with `**Breaking:**` and names the change's path in backticks (or, with no path, its type).
import { readFileSync } from 'node:fs'
import { CriticalityLevel, diff, type Change } from '@graphql-inspector/core'
import { buildSchema, type GraphQLSchema } from 'graphql'

export const RELEASED_SDL = new URL('../api/schema.released.graphql', import.meta.url)
export const CHANGELOG = new URL('../CHANGELOG.md', import.meta.url)

export function readReleasedSchema (): GraphQLSchema {
  return buildSchema(readFileSync(RELEASED_SDL, 'utf8'))
}

export function readChangelog (): string {
  return readFileSync(CHANGELOG, 'utf8')
}

/** How the changelog names a change: its path, else its type. */
export function changeId (change: Change): string {
  return change.path ?? change.type
}

/** The text of the changelog's `## [Unreleased]` section (empty when it has none). */
export function unreleasedSection (changelog: string): string {
  const match = /^## \[?Unreleased\]?[^\n]*\n([\s\S]*?)(?=^## |(?![\s\S]))/im.exec(changelog)
  return match?.[1] ?? ''
}

/** The ids (paths or types) the Unreleased section's `**Breaking:**` bullets name in backticks. */
export function announcedBreakingChanges (changelog: string): Set<string> {
  const announced = new Set<string>()
  // A bullet runs to the next bullet, heading or blank line.
  const bullets = unreleasedSection(changelog).split(/\n(?=\s*[-*] |#|\s*\n)/)
  for (const bullet of bullets) {
    if (!/^\s*[-*] \*\*Breaking:\*\*/i.test(bullet)) continue
    for (const [, id] of bullet.matchAll(/`([^`]+)`/g)) announced.add(id!)
  }
  return announced
}

/** Every change from `released` to `current`, by @graphql-inspector/core. */
export async function schemaChanges (released: GraphQLSchema, current: GraphQLSchema): Promise<Change[]> {
  return await diff(released, current)
}

/** The breaking changes from `released` to `current` that `changelog` does not announce. */
export async function unannouncedBreakingChanges (released: GraphQLSchema, current: GraphQLSchema, changelog: string): Promise<Change[]> {
  const announced = announcedBreakingChanges(changelog)
  return (await schemaChanges(released, current))
    .filter((change) => change.criticality.level === CriticalityLevel.Breaking && !announced.has(changeId(change)))
}
