// Migrations: applied in order once each, recorded, idempotent on restart, gaps refused.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eachDatabase } from "./support/db.ts";
import { migrate, readMigrations } from "../src/db/migrate.ts";

eachDatabase("migrations", (get) => {
  test("every migration is recorded once, and a restart applies nothing", async () => {
    const { db } = get();
    const recorded = await db.query<{ version: number; name: string }>(
      "SELECT version, name FROM schema_migrations ORDER BY version",
    );
    assert.deepEqual(
      recorded.map((r) => r.version),
      readMigrations().map((m) => m.version),
    );
    assert.deepEqual(await migrate(db), []);
    const again = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM schema_migrations");
    assert.equal(again[0].n, recorded.length);
  });

  test("a new numbered file is applied after the others, in one transaction", async () => {
    const { db } = get();
    const extra = [
      ...readMigrations(),
      { version: readMigrations().length + 1, name: "extra", text: "CREATE TABLE migration_probe (id integer);" },
    ];
    assert.deepEqual(await migrate(db, extra), [extra.length]);
    assert.deepEqual(await db.query("SELECT * FROM migration_probe"), []);
    const broken = [...extra, { version: extra.length + 1, name: "broken", text: "CREATE TABLE probe_two (id integer); SELEC 1;" }];
    await assert.rejects(() => migrate(db, broken));
    const tables = await db.query("SELECT 1 FROM information_schema.tables WHERE table_name = 'probe_two'");
    assert.equal(tables.length, 0, "a failed migration leaves nothing behind");
  });
});

test("a gap in the numbering stops the start with a clear message", () => {
  const dir = mkdtempSync(join(tmpdir(), "walletid-migrations-"));
  writeFileSync(join(dir, "00001_first.sql"), "SELECT 1;");
  writeFileSync(join(dir, "00003_third.sql"), "SELECT 1;");
  assert.throws(() => readMigrations(dir), /Cannot apply migrations: 3 follows 1/);
  writeFileSync(join(dir, "2_bad.sql"), "SELECT 1;");
  assert.throws(() => readMigrations(dir), /name must look like 00001_name\.sql/);
});
