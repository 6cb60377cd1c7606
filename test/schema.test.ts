// sql/schema.sql is exactly the schema the migrations produce: a migration landed without
// `npm run schema` fails here.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createPostgresDatabase, TEST_TIMEOUTS } from "./support/db.ts";
import { openDatabase } from "../src/db/open.ts";
import { migrate, readMigrations } from "../src/db/migrate.ts";
import type { Db } from "../src/db/types.ts";
import { SCHEMA_FILE, schemaText } from "../scripts/schema.ts";

/** The first line that differs, to say where the file is out of date. */
function firstDifference(expected: string, actual: string): string {
  const a = expected.split("\n");
  const b = actual.split("\n");
  const i = a.findIndex((line, n) => line !== b[n]);
  const at = i === -1 ? a.length : i;
  return `line ${at + 1}: the file has ${JSON.stringify(a[at] ?? "(end)")}, the migrations give ${JSON.stringify(b[at] ?? "(end)")}`;
}

describe("sql/schema.sql", () => {
  let db: Db;
  let drop: () => Promise<void>;
  before(async () => {
    const created = await createPostgresDatabase();
    drop = created.drop;
    db = await openDatabase({ databaseUrl: created.url, max: 1, timeouts: TEST_TIMEOUTS });
  });
  after(async () => {
    await db?.close();
    await drop?.();
  });

  test("is what the migrations produce, byte for byte", async (t) => {
    const file = readFileSync(SCHEMA_FILE, "utf8");
    const actual = await schemaText(db);
    // the catalog's deparsers write some definitions differently from one major version to the next
    const written = /on PostgreSQL (\d+)\./.exec(file)?.[1];
    const running = /on PostgreSQL (\d+)\./.exec(actual)?.[1];
    if (written !== running) {
      t.skip(`sql/schema.sql was written on PostgreSQL ${written}; this server is PostgreSQL ${running}`);
      return;
    }
    assert.ok(
      file === actual,
      `sql/schema.sql differs from what the migrations produce (${firstDifference(file, actual)}): run \`npm run schema\``,
    );
  });

  test("changes when a migration is added", async () => {
    const before = await schemaText(db);
    const probe = { version: readMigrations().length + 1, name: "probe", text: "CREATE TABLE schema_probe (id integer);" };
    assert.deepEqual(await migrate(db, [...readMigrations(), probe]), [probe.version]);
    const after = await schemaText(db);
    assert.notEqual(after, before);
    assert.match(after, /CREATE TABLE public\.schema_probe \(\n  id integer\n\);/);
  });

  test("refuses an object it would leave out, rather than leave it out", async () => {
    await db.exec("CREATE SCHEMA schema_probe_extra");
    await assert.rejects(() => schemaText(db), /Cannot write the schema: .*schema schema_probe_extra/);
  });
});
