// An example writer: enrols one student through Apollo Client with an idempotency key, so that a
// retry (after a timeout, a dropped connection, a crash before the answer was stored) creates the
// student once and gets the first answer again (docs/api/mutations.md). Environment: as
// list-students.ts, and SCHOOL_DATA_SOURCED_ID, SCHOOL_DATA_FULL_NAME, and SCHOOL_DATA_IDEMPOTENCY_KEY
// (default: a new UUID; keep the key of a request to retry it).
import { randomUUID } from 'node:crypto'
import { ApolloClient, CombinedGraphQLErrors, HttpLink, InMemoryCache } from '@apollo/client'
import { graphql } from './gql/index.js'

const Login = graphql(`
  mutation EnrolLogin($username: String!, $password: String!) {
    login(username: $username, password: $password) { accessToken }
  }
`)

const EnrolStudent = graphql(`
  mutation EnrolStudent($input: StudentInput!) {
    createStudent(input: $input) { id sourcedId fullName version }
  }
`)

const url = process.env.SCHOOL_DATA_URL ?? 'http://127.0.0.1:4000/'
const { SCHOOL_DATA_USERNAME: username, SCHOOL_DATA_PASSWORD: password, SCHOOL_DATA_SOURCED_ID: sourcedId, SCHOOL_DATA_FULL_NAME: fullName } = process.env
if (username === undefined || password === undefined || sourcedId === undefined || fullName === undefined) {
  console.error('Set SCHOOL_DATA_USERNAME, SCHOOL_DATA_PASSWORD, SCHOOL_DATA_SOURCED_ID and SCHOOL_DATA_FULL_NAME')
  process.exit(2)
}
const key = process.env.SCHOOL_DATA_IDEMPOTENCY_KEY ?? randomUUID()

async function main (username: string, password: string, input: { sourcedId: string, fullName: string }): Promise<void> {
  const anonymous = new ApolloClient({ link: new HttpLink({ uri: url }), cache: new InMemoryCache() })
  const { data: login } = await anonymous.mutate({ mutation: Login, variables: { username, password } })
  const client = new ApolloClient({ link: new HttpLink({ uri: url, headers: { authorization: `Bearer ${login!.login.accessToken}` } }), cache: new InMemoryCache() })
  // The key as the IETF draft's header, for this request only; a retry sends the same key.
  const { data } = await client.mutate({ mutation: EnrolStudent, variables: { input }, context: { headers: { 'Idempotency-Key': key } } })
  const student = data!.createStudent
  console.log(`${student.id}\t${student.sourcedId ?? ''}\t${student.fullName}\t${student.version}\t${key}`)
}

main(username, password, { sourcedId, fullName }).catch((error: unknown) => {
  if (CombinedGraphQLErrors.is(error)) {
    // Coded errors: BAD_USER_INPUT with extensions.invalid, CONFLICT, IDEMPOTENCY_KEY_REUSED, ...
    for (const e of error.errors) console.error(`${String(e.extensions?.code)}: ${e.message}`)
  } else {
    console.error(error)
  }
  process.exit(1)
})
