// Date and DateTime read and write what their @specifiedBy specifications say.
import t from 'tap'
import { Kind } from 'graphql'
import { dateCoercion, dateTimeCoercion } from '../src/graphql/resolvers/scalars.js'

t.test('Date: results and input are RFC 3339 full-dates of real days', async (t) => {
  t.equal(dateCoercion.serialize(new Date('2015-09-01T00:00:00.000Z')), '2015-09-01')
  t.same(dateCoercion.parseValue('2000-02-29'), new Date('2000-02-29T00:00:00.000Z'))
  t.same(dateCoercion.parseLiteral({ kind: Kind.STRING, value: '1983-10-20' }, {}), new Date('1983-10-20T00:00:00.000Z'))
  for (const bad of ['2001-02-29', '2011-13-10', '2023-2-5', '2023-12-24T15:30:00Z', 20231224]) {
    t.throws(() => dateCoercion.parseValue(bad), /Date must be a YYYY-MM-DD day/, String(bad))
  }
  t.throws(() => dateCoercion.parseLiteral({ kind: Kind.INT, value: '1' }, {}), /Date must be/)
})

t.test('DateTime: results in UTC with milliseconds; input an RFC 3339 date-time with milliseconds and an offset', async (t) => {
  t.equal(dateTimeCoercion.serialize(new Date('2026-11-23T13:15:02.123Z')), '2026-11-23T13:15:02.123Z')
  t.equal(dateTimeCoercion.serialize('2026-11-23T14:15:02.123+01:00'), '2026-11-23T13:15:02.123Z')
  const instant = new Date('2011-08-30T13:22:53.108Z')
  for (const good of ['2011-08-30T13:22:53.108Z', '2011-08-30t13:22:53.108z', '2011-08-30T13:22:53.108+00:00', '2011-08-30T10:22:53.108-03:00']) {
    t.same(dateTimeCoercion.parseValue(good), instant, good)
    t.same(dateTimeCoercion.parseLiteral({ kind: Kind.STRING, value: good }, {}), instant, good)
  }
  for (const bad of [
    '2011-08-30T13:22:53.108-03', '2011-08-30T13:22:53.108-00:00', '2011-08-30T13:22:53Z', '2011-08-30T13:22:53.1Z',
    '2011-08-30T24:00:00.000Z', '2011-02-30T13:22:53.108Z', '2011-08-30', 'Tue Aug 30 2011', 1314710573108
  ]) {
    t.throws(() => dateTimeCoercion.parseValue(bad), /DateTime must be an RFC 3339 date-time/, String(bad))
  }
  t.throws(() => dateTimeCoercion.parseLiteral({ kind: Kind.INT, value: '1' }, {}), /DateTime must be/)
})
