// The metering lane's connection (src/db/postgres.ts, `lane`): one of the pool's connections kept
// for the lane's statements, so that one backend runs them all and nothing else. The process still
// holds no more than its pool size, the lane comes back after its backend is killed, and closing
// the database closes it too. (PGlite has one session: the group-metering suite runs its lane
// statements there.)
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import postgres from "postgres";
import { openPostgres } from "../../src/db/postgres.ts";
import type { Db } from "../../src/db/types.ts";
import { ADMIN_URL, createPostgresDatabase, TEST_TIMEOUTS } from "../support/db.ts";

const WHO = "SELECT pg_backend_pid() AS pid, current_setting('application_name') AS app";

async function onLane(db: Db): Promise<{ pid: number; app: string }> {
  const { rows } = await db.queryArrays(WHO, [], { lane: true });
  return { pid: rows[0][0] as number, app: rows[0][1] as string };
}

describe("the metering lane's connection [postgres]", () => {
  let created: { url: string; drop: () => Promise<void> };
  let name: string;
  let admin: postgres.Sql;

  before(async () => {
    created = await createPostgresDatabase();
    name = new URL(created.url).pathname.slice(1);
    admin = postgres(ADMIN_URL, { max: 1, onnotice: () => {} });
  });
  after(async () => {
    await admin.end();
    await created.drop();
  });

  const backends = async () =>
    (await admin.unsafe("SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend'", [name])) as unknown as Array<{ pid: number; app: string }>;

  test("lane statements run on one backend of their own, the rest on the others, within the pool size", async () => {
    const db = openPostgres(created.url, { max: 3, lane: true, timeouts: TEST_TIMEOUTS });
    try {
      // the pool's statements at once, enough to open every connection the pool may hold
      const pooled = await Promise.all(
        Array.from({ length: 8 }, () => db.query<{ pid: number }>("SELECT pg_backend_pid() AS pid, pg_sleep(0.05)")),
      );
      const lane = await Promise.all(Array.from({ length: 4 }, () => onLane(db)));
      const lanePids = new Set(lane.map((l) => l.pid));
      const poolPids = new Set(pooled.map((rows) => rows[0].pid));
      assert.equal(lanePids.size, 1, "every lane statement on one backend");
      assert.equal(lane[0].app, "walletid meter lane");
      assert.equal(poolPids.size, 2, "the pool keeps the other two connections");
      assert.ok(!poolPids.has(lane[0].pid), "no pool statement on the lane's backend");
      const held = await backends();
      assert.equal(held.length, 3, "no more connections than the pool size");
      assert.equal(held.filter((b) => b.app === "walletid meter lane").length, 1);
    } finally {
      await db.close();
    }
  });

  test("without a lane, or with a pool of one, a lane statement runs on the pool like any other", async () => {
    for (const options of [{ max: 2 }, { max: 1, lane: true }]) {
      const db = openPostgres(created.url, { ...options, timeouts: TEST_TIMEOUTS });
      try {
        const lane = await onLane(db);
        assert.notEqual(lane.app, "walletid meter lane", JSON.stringify(options));
        const held = await backends();
        assert.ok(held.length <= options.max, `${held.length} connections held, ${options.max} at most`);
      } finally {
        await db.close();
      }
    }
  });

  test("a killed lane backend: the lane answers again on a new one", async () => {
    const db = openPostgres(created.url, { max: 2, lane: true, timeouts: TEST_TIMEOUTS });
    try {
      const first = await onLane(db);
      await admin.unsafe("SELECT pg_terminate_backend($1)", [first.pid]);
      let again: { pid: number; app: string } | undefined;
      // the statement sent before the driver saw the connection close may fail; the next works
      for (let attempt = 0; attempt < 20 && !again; attempt++) {
        again = await onLane(db).catch(async () => {
          await new Promise((resolve) => setTimeout(resolve, 50));
          return undefined;
        });
      }
      assert.ok(again, "the lane answered again");
      assert.notEqual(again.pid, first.pid);
      assert.equal(again.app, "walletid meter lane");
    } finally {
      await db.close();
    }
  });

  test("closing the database closes the lane's connection too", async () => {
    const db = openPostgres(created.url, { max: 2, lane: true, timeouts: TEST_TIMEOUTS });
    await onLane(db);
    await db.query("SELECT 1");
    assert.equal((await backends()).length, 2);
    await db.close();
    for (let i = 0; i < 50 && (await backends()).length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal((await backends()).length, 0, "no connection left open");
  });
});
