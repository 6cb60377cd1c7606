// The embedded database's data directory: one process at a time (PGlite files must never be
// opened twice), and the private files kept beside the database.
import { chmodSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function readPid(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function removeIfPresent(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
}

/**
 * Takes `${dataDir}/walletid.lock` for this process, creating dataDir if needed. A lock left by a
 * process that is no longer running is replaced. Returns the function that releases it.
 */
export function acquireDataDirLock(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const lockPath = join(dataDir, "walletid.lock");
  // written aside, then linked into place: the lock file never exists without its pid in it
  const pending = join(dataDir, `walletid.lock.${process.pid}`);
  writeFileSync(pending, `${process.pid}\n`);
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(pending, lockPath);
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST" || attempt >= 2) throw error;
      }
      const holder = readPid(lockPath);
      if (holder !== undefined && isAlive(holder)) {
        throw new Error(
          `The embedded database in ${dataDir} is in use by a running walletid server (pid ${holder}): stop it, or set DATABASE_URL to use PostgreSQL`,
        );
      }
      removeIfPresent(lockPath);
    }
  } finally {
    removeIfPresent(pending);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    // only our own lock: never remove one another process took after a stale replacement
    if (readPid(lockPath) === process.pid) removeIfPresent(lockPath);
  };
}

/** Writes a file only the owner can read (the demo API key), creating dataDir if needed. */
export function writePrivateFile(dataDir: string, name: string, text: string): string {
  mkdirSync(dataDir, { recursive: true });
  const path = join(dataDir, name);
  writeFileSync(path, text, { mode: 0o600 });
  // writeFileSync keeps the mode of a file that already existed
  chmodSync(path, 0o600);
  return path;
}
