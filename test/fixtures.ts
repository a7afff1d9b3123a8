// Test data that the CLI has no command for (yet).
import type { Database } from '../src/db/client.js'

/** Assigns a teacher to a classroom of their school, creating the classroom by name if needed. */
export async function createClassroomAssignment (
  db: Database,
  schoolId: string,
  teacherId: string,
  classroomName: string,
  role: 'PRIMARY' | 'ASSISTANT' = 'PRIMARY'
): Promise<string> {
  const tenant = db.forSchool(schoolId)
  const room = await tenant.classroom.upsert({
    where: { schoolId_name: { schoolId, name: classroomName } },
    create: { schoolId, name: classroomName },
    update: {},
    select: { id: true }
  })
  await tenant.teacherClassroom.create({ data: { schoolId, teacherId, classroomId: room.id, role } })
  return room.id
}
