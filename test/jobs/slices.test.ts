// A job's submission as slices of addresses (00013_job_slices.sql): every position range reads
// back the submission's addresses in order, across the slices' boundaries, whether the job was
// submitted after the migration or its job_wallets rows were moved into slices by it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { migrate, readMigrations } from "../../src/db/migrate.ts";
import { openPglite } from "../../src/db/pglite.ts";
import { openPostgres } from "../../src/db/postgres.ts";
import { loadQueries, sql } from "../../src/db/queries.ts";
import type { Db } from "../../src/db/types.ts";
import { createJob } from "../../src/jobs/submit.ts";
import { createPostgresDatabase, TEST_TIMEOUTS } from "../support/db.ts";
import { address } from "../support/http.ts";
import { createCustomer } from "../support/server.ts";

const NOW = new Date("2026-11-20T12:00:00Z");
const WALLETS = Array.from({ length: 2345 }, (_, i) => address(i, "5e"));
// [offset, limit]: within a slice, across one and two boundaries, the tail, past the end
const RANGES: Array<[number, number]> = [[0, 1000], [900, 250], [999, 2], [0, 2345], [1500, 1000], [2300, 1000], [2345, 10]];

async function readsBack(db: Db, jobId: string) {
  for (const [offset, limit] of RANGES) {
    const rows = await db.query<{ address: string }>(sql("job_wallet_slices_select_range"), [jobId, offset, limit]);
    assert.deepEqual(rows.map((r) => r.address), WALLETS.slice(offset, offset + limit), `positions ${offset} + ${limit}`);
  }
}

async function openEmpty(kind: "pglite" | "postgres"): Promise<{ db: Db; close: () => Promise<void> }> {
  loadQueries();
  if (kind === "pglite") {
    const db = await openPglite(undefined, TEST_TIMEOUTS);
    return { db, close: () => db.close() };
  }
  const created = await createPostgresDatabase();
  const db = openPostgres(created.url, { timeouts: TEST_TIMEOUTS });
  return {
    db,
    close: async () => {
      await db.close();
      await created.drop();
    },
  };
}

for (const kind of ["pglite", "postgres"] as const) {
  describe(`job wallet slices [${kind}]`, () => {
    test("a submission reads back by any range, across the slices' boundaries", async () => {
      const { db, close } = await openEmpty(kind);
      try {
        await migrate(db);
        const customer = await createCustomer(db, { now: NOW });
        const created = await createJob(db, { accountId: customer.accountId, keyId: customer.keyId, wallets: WALLETS, now: NOW });
        assert.ok(created.ok);
        const slices = await db.query<{ start: number; stop: number }>("SELECT start, stop FROM job_wallet_slices WHERE job_id = $1 ORDER BY start", [
          created.jobId,
        ]);
        assert.deepEqual(slices, [{ start: 0, stop: 1000 }, { start: 1000, stop: 2000 }, { start: 2000, stop: 2345 }]);
        await readsBack(db, created.jobId);
      } finally {
        await close();
      }
    });

    test("the migration moves a job's job_wallets rows into slices", async () => {
      const { db, close } = await openEmpty(kind);
      try {
        const before = readMigrations().filter((m) => m.version < 13);
        await migrate(db, before);
        const customer = await createCustomer(db, { now: NOW });
        const jobId = crypto.randomUUID();
        await db.query("INSERT INTO jobs (id, account_id, key_id, status, total, created_at) VALUES ($1, $2, $3, 'processing', $4, $5)", [
          jobId,
          customer.accountId,
          customer.keyId,
          WALLETS.length,
          NOW,
        ]);
        await db.query(
          "INSERT INTO job_wallets (job_id, position, address) SELECT $1, t.n::integer - 1, t.address FROM unnest($2::text[]) WITH ORDINALITY AS t (address, n)",
          [jobId, WALLETS],
        );
        await migrate(db);
        await readsBack(db, jobId);
        const [job] = await db.query<{ matched_written: number | null }>("SELECT matched_written FROM jobs WHERE id = $1", [jobId]);
        assert.equal(job.matched_written, null, "a job from before keeps no count: its completion counts every wallet");
      } finally {
        await close();
      }
    });
  });
}
