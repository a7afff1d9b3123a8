// The description lint: every element of a schema a consumer reads (type, field, argument, input
// field, enum value, directive and its arguments) has a description, and every custom scalar a
// @specifiedBy URL. Built on graphql-js's public schema API only.
import {
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isScalarType,
  isSpecifiedDirective,
  isSpecifiedScalarType,
  type GraphQLArgument,
  type GraphQLSchema
} from 'graphql'

const described = (description: string | null | undefined): boolean => (description ?? '').trim() !== ''

/** The coordinates of the elements of `schema` without a description, e.g. `Mutation.login(username:)`. */
export function undescribed (schema: GraphQLSchema): string[] {
  const missing: string[] = []
  const check = (coordinate: string, description: string | null | undefined): void => {
    if (!described(description)) missing.push(coordinate)
  }
  const checkArgs = (owner: string, args: readonly GraphQLArgument[]): void => {
    for (const arg of args) check(`${owner}(${arg.name}:)`, arg.description)
  }
  for (const type of Object.values(schema.getTypeMap())) {
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue
    check(type.name, type.description)
    if (isObjectType(type) || isInterfaceType(type)) {
      for (const field of Object.values(type.getFields())) {
        check(`${type.name}.${field.name}`, field.description)
        checkArgs(`${type.name}.${field.name}`, field.args)
      }
    } else if (isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) check(`${type.name}.${field.name}`, field.description)
    } else if (isEnumType(type)) {
      for (const value of type.getValues()) check(`${type.name}.${value.name}`, value.description)
    } else if (isScalarType(type) && !described(type.specifiedByURL)) {
      missing.push(`${type.name} @specifiedBy`)
    }
  }
  for (const directive of schema.getDirectives()) {
    if (isSpecifiedDirective(directive)) continue
    check(`@${directive.name}`, directive.description)
    checkArgs(`@${directive.name}`, directive.args)
  }
  return missing
}
