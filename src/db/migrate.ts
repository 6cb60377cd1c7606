// Applies the numbered files of sql/migrations in order, once each, recorded in schema_migrations.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Db } from "./types.ts";
import { SQL_DIR } from "./queries.ts";

export interface Migration {
  version: number;
  name: string;
  text: string;
}

export function readMigrations(dir = join(SQL_DIR, "migrations")): Migration[] {
  const files = readdirSync(dir).filter((f) => f.endsWith(".sql")).sort();
  const migrations = files.map((file) => {
    const match = /^(\d{5})_([a-z0-9_]+)\.sql$/.exec(file);
    if (!match) throw new Error(`Cannot read migration ${file}: name must look like 00001_name.sql`);
    return { version: Number(match[1]), name: match[2], text: readFileSync(join(dir, file), "utf8") };
  });
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) throw new Error(`Cannot apply migrations: ${m.version} follows ${i} (a gap)`);
  });
  return migrations;
}

/** Applies pending migrations in one transaction; returns the versions applied. */
export async function migrate(db: Db, migrations = readMigrations()): Promise<number[]> {
  return await db.transaction(async (tx) => {
    // two processes starting at once on one PostgreSQL: the second waits, then finds nothing to do
    await tx.query("SELECT pg_advisory_xact_lock(7201001)");
    await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set(
      (await tx.query<{ version: number }>("SELECT version FROM schema_migrations")).map((r) => r.version),
    );
    const applied: number[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await tx.exec(m.text);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  }, { bulk: true });
}
