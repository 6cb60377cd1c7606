// Rows as the drivers hand them over: a plain array in the statement's order, inside a transaction
// too, and nothing of a statement that failed mid-result in the answer of the next one on the same
// connection (src/db/postgres.ts collects rows with forEach rather than taking the Result).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { openPostgres } from "../../src/db/postgres.ts";
import type { Db } from "../../src/db/types.ts";
import { createPostgresDatabase, eachDatabase, TEST_TIMEOUTS } from "../support/db.ts";

const SERIES = "SELECT g AS n, g::text AS s, NULL::text AS none FROM generate_series(1, $1::integer) g ORDER BY g";
// fails on the fourth row, after three have been sent
const CUT = "SELECT CASE WHEN g < 4 THEN g ELSE 1 / (g - g) END AS n FROM generate_series(1, 6) g";

function assertSeries(rows: unknown, count: number): void {
  assert.ok(Array.isArray(rows) && Object.getPrototypeOf(rows) === Array.prototype, "a plain array");
  assert.deepEqual(
    rows,
    Array.from({ length: count }, (_, i) => ({ n: i + 1, s: String(i + 1), none: null })),
  );
}

eachDatabase("rows", (get) => {
  test("a statement's rows come back as a plain array in its order, in and out of a transaction", async () => {
    const { db } = get();
    assertSeries(await db.query(SERIES, [300]), 300);
    assertSeries(await db.query(SERIES, [0]), 0);
    const inside = await db.transaction(async (tx) => [await tx.query(SERIES, [3]), await tx.query(SERIES, [2])]);
    assertSeries(inside[0], 3);
    assertSeries(inside[1], 2);
  });

  test("queryArrays: each row an array in column order, its values parsed as query parses them, with the column names", async () => {
    const { db } = get();
    const text = "SELECT g AS n, g::text AS s, NULL::text AS none, (g > 1) AS more, timestamptz '2026-11-27 12:00:00.123+00' + g * interval '1 day' AS at, 1.5::float8 * g AS half, jsonb_build_object('g', g) AS detail FROM generate_series(1, $1::integer) g ORDER BY g";
    const { columns, rows } = await db.queryArrays(text, [2]);
    assert.deepEqual(columns, ["n", "s", "none", "more", "at", "half", "detail"]);
    assert.deepEqual(rows, [
      [1, "1", null, false, new Date("2026-11-28T12:00:00.123Z"), 1.5, { g: 1 }],
      [2, "2", null, true, new Date("2026-11-29T12:00:00.123Z"), 3, { g: 2 }],
    ]);
    // the same values as keyed rows
    const keyed = await db.query(text, [2]);
    assert.deepEqual(rows, keyed.map((row) => columns.map((name) => row[name])));
    const inside = await db.transaction(async (tx) => await tx.queryArrays(SERIES, [3]));
    assert.deepEqual(inside.rows, [[1, "1", null], [2, "2", null], [3, "3", null]]);
    assert.deepEqual((await db.queryArrays(SERIES, [0])).rows, []);
    await assert.rejects(db.queryArrays(CUT), /division by zero/);
    assert.deepEqual((await db.queryArrays(SERIES, [1])).rows, [[1, "1", null]]);
  });

  test("a statement that fails after sending rows rejects, and the next one answers its own rows only", async () => {
    const { db } = get();
    await assert.rejects(db.query(CUT), /division by zero/);
    assertSeries(await db.query(SERIES, [2]), 2);
  });
});

describe("rows on one connection (PostgreSQL, a pool of one)", () => {
  let db: Db;
  let drop: () => Promise<void>;
  before(async () => {
    const created = await createPostgresDatabase();
    drop = created.drop;
    db = openPostgres(created.url, { max: 1, timeouts: TEST_TIMEOUTS });
  });
  after(async () => {
    await db.close();
    await drop();
  });

  test("statements sent together each answer their own rows, one failing mid-result among them", async () => {
    const answers = await Promise.allSettled([db.query(SERIES, [5]), db.query(CUT), db.query(SERIES, [1]), db.query(SERIES, [4])]);
    assert.equal(answers[1].status, "rejected");
    assertSeries((answers[0] as PromiseFulfilledResult<unknown>).value, 5);
    assertSeries((answers[2] as PromiseFulfilledResult<unknown>).value, 1);
    assertSeries((answers[3] as PromiseFulfilledResult<unknown>).value, 4);
  });
});
