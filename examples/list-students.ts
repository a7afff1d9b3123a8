// An example consumer: logs in, pages through the school's students and prints them, with
// documents typed by the client preset (codegen.ts) and graphql-request. Environment:
// SCHOOL_DATA_URL (default http://127.0.0.1:4000/), SCHOOL_DATA_USERNAME, SCHOOL_DATA_PASSWORD.
import { ClientError, GraphQLClient } from 'graphql-request'
import { graphql } from './gql/index.js'
import type { StudentsPageQuery } from './gql/graphql.js'

const Login = graphql(`
  mutation Login($username: String!, $password: String!) {
    login(username: $username, password: $password) { accessToken }
  }
`)

// Small pages, to show the paging; a page may hold up to 1000.
const StudentsPage = graphql(`
  query StudentsPage($after: String) {
    studentsPage(limit: 3, after: $after, orderBy: { field: FAMILY_NAME }) {
      nodes { id fullName status }
      pageInfo { endCursor hasNextPage }
    }
  }
`)

const url = process.env.SCHOOL_DATA_URL ?? 'http://127.0.0.1:4000/'
const username = process.env.SCHOOL_DATA_USERNAME
const password = process.env.SCHOOL_DATA_PASSWORD
if (username === undefined || password === undefined) {
  console.error('Set SCHOOL_DATA_USERNAME and SCHOOL_DATA_PASSWORD')
  process.exit(2)
}

async function main (username: string, password: string): Promise<void> {
  const { login } = await new GraphQLClient(url).request(Login, { username, password })
  const client = new GraphQLClient(url, { headers: { authorization: `Bearer ${login.accessToken}` } })
  let after: string | null = null
  do {
    const { studentsPage }: StudentsPageQuery = await client.request(StudentsPage, { after })
    for (const student of studentsPage.nodes) console.log(`${student.id}\t${student.fullName}\t${student.status}`)
    after = studentsPage.pageInfo.hasNextPage ? studentsPage.pageInfo.endCursor ?? null : null
  } while (after !== null)
}

main(username, password).catch((error: unknown) => {
  if (error instanceof ClientError) {
    // Coded errors: extensions.code, and extensions.retryAfter (seconds) on TOO_MANY_REQUESTS.
    for (const e of error.response.errors ?? []) console.error(`${String(e.extensions?.code)}: ${e.message}`)
  } else {
    console.error(error)
  }
  process.exit(1)
})
