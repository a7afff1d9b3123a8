// PGlite is one process's database: a second process opening the same folder would corrupt it.
// A lock file with the owner's pid makes the second one stop with a clear message instead.
import { readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export class DatabaseBusyError extends Error {
  override name = 'DatabaseBusyError'
}

function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Takes the lock of an embedded database folder; returns the function that releases it. */
export function lockDataDir (dir: string): () => void {
  const file = join(dir, 'owner.pid')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      return () => rmSync(file, { force: true })
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
    }
    const owner = Number.parseInt(readFileSync(file, 'utf8'), 10)
    if (Number.isInteger(owner) && owner !== process.pid && alive(owner)) {
      throw new DatabaseBusyError(
        `The embedded database in ${dir} is in use by another process (pid ${owner}), e.g. a running server: ` +
        'stop it first, or set DATABASE_URL to use a PostgreSQL server that many processes can share'
      )
    }
    rmSync(file, { force: true }) // left by a process that ended without releasing it
  }
  throw new DatabaseBusyError(`Could not lock the embedded database in ${dir}`)
}
