// The install-time fixes to postgres.js (scripts/patch-postgres.mjs): under Node, Bun and Deno, a
// statement whose answer is cut short no longer offsets the next statement's rows; a connection
// closed with a write pending connects again; the connection queues stay compact under traffic.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import postgres from "postgres";
import { ROOT } from "../support/process.ts";
import { createPostgresDatabase } from "../support/db.ts";

const run = promisify(execFile);
const BIN = join(ROOT, "node_modules", ".bin");

describe("postgres.js: rows after an answer cut short", () => {
  let created: { url: string; drop: () => Promise<void> };
  before(async () => {
    created = await createPostgresDatabase();
  });
  after(async () => {
    await created.drop();
  });

  for (const [runtime, command, args] of [
    ["Node", process.execPath, []],
    ["Bun", join(BIN, "bun"), ["run"]],
    ["Deno", join(BIN, "deno"), ["run", "--allow-net", "--allow-env", "--allow-read", "--allow-sys"]],
  ] as const) {
    test(`${runtime}: SELECT 1 after a statement that failed mid-result answers one row`, async () => {
      const { stdout } = await run(command, [...args, join(ROOT, "test/db/fixtures/cut-short.mjs"), created.url], { cwd: ROOT, timeout: 60_000 });
      // unpatched: {"length":3,"first":null}, the row behind two holes
      assert.deepEqual(JSON.parse(stdout.trim().split("\n").at(-1)!), { length: 1, first: { x: 1 } });
    });
  }
});

describe("postgres.js: a write pending when its connection closes", () => {
  let created: { url: string; drop: () => Promise<void> };
  before(async () => {
    created = await createPostgresDatabase();
  });
  after(async () => {
    await created.drop();
  });

  test("both connections of a pool cut at once, a query retried on the other in between: every connection connects again", async () => {
    const hung: string[] = [];
    // without the patch about one round in four leaves a connection that never sends its startup
    for (let round = 0; round < 20; round++) {
      const sockets: Socket[] = [];
      // `socket` (a connection factory) is an option of postgres.js its types do not name
      const options = {
        max: 2,
        connect_timeout: 2,
        fetch_types: false,
        onnotice: () => {},
        backoff: () => 0.01,
        socket: () => new Promise<Socket>((resolve) => {
          const socket = connect(Number(new URL(created.url).port || 5432), "127.0.0.1");
          sockets.push(socket);
          socket.once("connect", () => resolve(socket));
        }),
      };
      const sql = postgres(created.url, options as unknown as postgres.Options<Record<string, never>>);
      await Promise.all([sql.unsafe("SELECT pg_sleep(0.02)"), sql.unsafe("SELECT pg_sleep(0.02)")]);
      // a long query on one connection; when its connection is cut, it is retried at once on the
      // other, which is cut in the same tick
      const retried = new Promise((resolve) => {
        sql.unsafe("SELECT pg_sleep(1)").then(resolve, () => resolve(sql.unsafe("SELECT 2").catch((err: Error) => err.message)));
      });
      await new Promise((resolve) => setTimeout(resolve, 30));
      for (const socket of sockets) socket.destroy();
      await retried;
      const outcomes = await Promise.all(Array.from({ length: 6 }, () => sql.unsafe("SELECT 3").then(() => "ok", (err: Error) => err.message)));
      for (const outcome of outcomes) if (outcome !== "ok") hung.push(`round ${round}: ${outcome}`);
      await sql.end({ timeout: 1 });
    }
    assert.deepEqual(hung, []);
  });
});

describe("postgres.js: the connection queue", () => {
  test("under steady traffic that never drains it, the queue stays compact and remove() scans only what is queued", async () => {
    const { default: Queue } = (await import(join(ROOT, "node_modules/postgres/src/queue.js"))) as { default: () => { push(x: unknown): unknown; shift(): unknown; remove(x: unknown): unknown; length: number } };
    const queue = Queue();
    // what postgres.js does with its connection queues: moved in and out, never empty for long
    const scanned: number[] = [];
    const indexOf = Array.prototype.indexOf;
    Array.prototype.indexOf = function (this: unknown[], ...args: [unknown, number?]) {
      scanned.push(this.length - (args[1] ?? 0));
      return indexOf.apply(this, args);
    };
    try {
      const items = Array.from({ length: 4 }, (_, i) => ({ i }));
      for (const item of items) queue.push(item);
      for (let n = 0; n < 50_000; n++) {
        const head = queue.shift();
        const other = items[(n + 2) % items.length];
        if (queue.remove(other) !== null) queue.push(other);
        queue.push(head);
      }
    } finally {
      Array.prototype.indexOf = indexOf;
    }
    assert.equal(queue.length, 4);
    // unpatched the array only grows: the last remove() scans about 50,000 slots
    assert.ok(Math.max(...scanned.slice(-1000)) < 200, `slots scanned by the last removes: ${Math.max(...scanned.slice(-1000))}`);
  });

  test("the patch is applied to all three builds of postgres.js, and applying it again changes nothing", async () => {
    const { patchPostgres } = (await import(join(ROOT, "scripts/patch-postgres.mjs"))) as { patchPostgres: () => string[] };
    assert.deepEqual(patchPostgres(), []);
    for (const build of ["src", "cjs/src", "cf/src"]) {
      for (const [file, fixes] of [["connection.js", 3], ["queue.js", 2]] as const) {
        const text = readFileSync(join(ROOT, "node_modules/postgres", build, file), "utf8");
        assert.equal(text.match(/walletid patch/g)?.length, fixes, `${build}/${file}`);
      }
    }
  });
});
