// users.csv's guardians, parents and relatives (OneRoster's agents of a student) → the school's
// agents (docs/running/import.md): each kept with the fields users.csv gives a user, and the
// students it is an agent of. users.csv links them both ways (agentSourcedIds): a student's row names
// her agents, an agent's row her students; a link either row names is kept. The links of a user
// the file lists are what the file says; the links of users it does not list stay (a delta). A
// reference to a user that is not an agent of this import or the school's (from a student's row),
// or not a student (from an agent's row), is refused with its line: the model keeps a student's
// agents only.
import type { Row, Table } from './bundle.js'
import type { RoleDetails, UserDetails } from './user-details.js'

/** OneRoster 1.2's roles of a student's agents (RoleEnum), the only ones kept as agents. */
export const AGENT_ROLES = ['guardian', 'parent', 'relative'] as const
export type AgentRole = typeof AGENT_ROLES[number]

export function isAgentRole (role: string): role is AgentRole {
  return (AGENT_ROLES as readonly string[]).includes(role)
}

/** An agent as the import writes it (the fields of users.csv, as a teacher's). */
export interface AgentRecord extends UserDetails, RoleDetails {
  id: string
  sourcedId: string
  role: AgentRole
  givenName: string
  familyName: string
  preferredName: string | null
  email: string | null
  status: 'ACTIVE' | 'INACTIVE'
  /** The students it is an agent of (their ids), in the order of their sourcedIds. */
  studentIds: string[]
}

/** An agent the users file does not hold, whose students the file changes. */
export interface AgentLinks {
  id: string
  studentIds: string[]
}

/** An agent of the school, as the import matches it. */
export interface ExistingAgent {
  id: string
  sourcedId: string | null
  studentIds: string[]
}

/** A row of users.csv naming users in agentSourcedIds: its table, line and the sourcedIds named. */
export interface Named {
  table: Table
  row: Row
  sourcedIds: string[]
}

export interface AgentInput {
  /** The agents of the users file (not deleted), their fields checked, each with its row's agentSourcedIds. */
  agents: Array<{ record: Omit<AgentRecord, 'studentIds'>, named: Named }>
  /** The students of the users file (not deleted), by id, each with its row's agentSourcedIds. */
  students: Array<{ id: string, named: Named }>
  /** The school's agents this import keeps (not removed). */
  kept: ExistingAgent[]
  /** Every student this import keeps (the file's and the school's), sourcedId (or id) → id. */
  studentBySourced: ReadonlyMap<string, string>
  /** Students this import removes (ids): they leave their agents' lists. */
  removedStudents: ReadonlySet<string>
  /** Why a sourcedId is no student or agent of the import's, when it is a user the import knows otherwise (a teacher, a user removed, of another role). */
  otherUser: (sourcedId: string) => string | undefined
  fail: (table: Table, line: number, reason: string) => never
}

/** The agents to write, whole (those of the file) or their students only (the school's the file's students change). */
export function planAgents (input: AgentInput): { agents: AgentRecord[], links: AgentLinks[] } {
  const agentBySourced = new Map<string, string>()
  for (const agent of input.kept) if (agent.sourcedId !== null) agentBySourced.set(agent.sourcedId, agent.id)
  for (const { record } of input.agents) agentBySourced.set(record.sourcedId, record.id)
  const links = new Map<string, Set<string>>() // agent id → student ids the file links
  const link = (agent: string, student: string): void => {
    const set = links.get(agent) ?? new Set()
    links.set(agent, set.add(student))
  }
  for (const { record, named } of input.agents) {
    links.set(record.id, links.get(record.id) ?? new Set())
    for (const sourcedId of named.sourcedIds) {
      const student = input.studentBySourced.get(sourcedId)
      if (student === undefined) {
        input.fail(named.table, named.row.line, `agentSourcedIds: user "${sourcedId}" is ${input.otherUser(sourcedId) ?? 'neither in users.csv nor in the school'}: a ${record.role}'s agents are the students it is an agent of`)
      }
      link(record.id, student)
    }
  }
  for (const { id, named } of input.students) {
    for (const sourcedId of named.sourcedIds) {
      const agent = agentBySourced.get(sourcedId)
      if (agent === undefined) {
        input.fail(named.table, named.row.line, `agentSourcedIds: user "${sourcedId}" is ${input.otherUser(sourcedId) ?? 'neither in users.csv nor in the school'}: a student's agents are guardians, parents or relatives`)
      }
      link(agent, id)
    }
  }
  // A student the file lists has the agents the file says; one it does not list keeps hers.
  const listedStudents = new Set(input.students.map((s) => s.id))
  const keyOf = new Map([...input.studentBySourced].map(([sourcedId, id]) => [id, sourcedId]))
  const ordered = (ids: Iterable<string>): string[] => [...new Set(ids)]
    .filter((id) => !input.removedStudents.has(id))
    .sort((a, b) => (keyOf.get(a) ?? a) < (keyOf.get(b) ?? b) ? -1 : (keyOf.get(a) ?? a) > (keyOf.get(b) ?? b) ? 1 : 0)
  const agents = input.agents.map(({ record }) => ({ ...record, studentIds: ordered(links.get(record.id)!) }))
  const inFile = new Set(agents.map((a) => a.id))
  const changed: AgentLinks[] = []
  for (const agent of input.kept) {
    if (inFile.has(agent.id)) continue
    const studentIds = ordered([...agent.studentIds.filter((id) => !listedStudents.has(id)), ...(links.get(agent.id) ?? [])])
    if (studentIds.length !== agent.studentIds.length || studentIds.some((id, i) => id !== agent.studentIds[i])) changed.push({ id: agent.id, studentIds })
  }
  return { agents, links: changed }
}
