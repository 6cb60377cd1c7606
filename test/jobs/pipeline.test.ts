// The job pipeline's database side: the cache lookup, prepared while live_answers was empty, is
// planned again with each chunk and reads the key once the table has grown; reverse_entries, which a
// job's chunk transactions queue rather than refresh, is complete and counted when the job completes
// or fails; and the reverse triggers still refresh at once for every other writer. A submission
// wakes an idle worker at once; the billed count is kept chunk by chunk.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sql } from "../../src/db/queries.ts";
import type { Db } from "../../src/db/types.ts";
import { createWorker, type Worker } from "../../src/jobs/worker.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer } from "../support/server.ts";
import { expectStatus } from "../support/http.ts";
import { liveEns, liveFarcaster, startJobBench, submit, unknown, type JobBench } from "./support.ts";

const ASKED = Array.from({ length: 10 }, (_, i) => `0x${i.toString(16).padStart(40, "a")}`);

// EXECUTE takes no bind parameters of its own: the test's fixed arguments are written out
const PROBE = `cache_probe('{${ASKED.join(",")}}', '{neynar,ens}', '2026-01-01T00:00:00Z')`;

async function plan(tx: Db): Promise<string> {
  const rows = await tx.query<{ "QUERY PLAN": string }>(`EXPLAIN EXECUTE ${PROBE}`);
  return rows.map((r) => r["QUERY PLAN"]).join("\n");
}

async function reverseOf(db: Db, kind: string, key: string): Promise<{ wallets: string[]; counted: number | null }> {
  const entries = await db.query<{ wallet: string }>("SELECT wallet FROM reverse_entries WHERE kind = $1 AND key = $2 ORDER BY wallet", [kind, key]);
  const [count] = await db.query<{ n: number }>("SELECT n FROM reverse_counts WHERE kind = $1 AND key = $2", [kind, key]);
  return { wallets: entries.map((e) => e.wallet), counted: count?.n ?? null };
}

eachDatabase("job pipeline", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let bench: JobBench;

  before(async () => {
    bench = await startJobBench(get().db, clock, { JOB_CHUNK_SIZE: "10" });
  });
  after(() => bench.close());

  test("the cache lookup prepared on an empty live_answers reads its key once the table has grown", async () => {
    await get().db.transaction(
      async (tx) => {
        await tx.query("DELETE FROM live_answers");
        await tx.query("ANALYZE live_answers");
        // what the PostgreSQL pool does to every statement: one plan, made at its first execution
        await tx.query("SELECT set_config('plan_cache_mode', 'force_generic_plan', true)");
        await tx.exec(`PREPARE cache_probe (text[], text[], timestamptz) AS ${sql("live_answers_select_fresh")}`);
        await tx.query(`EXECUTE ${PROBE}`);
        await tx.query(
          `INSERT INTO live_answers (address, source, found, checked_at)
           SELECT '0x' || lpad(to_hex(i), 40, '0'), s, false, $1 FROM generate_series(1, 20000) AS i, unnest(ARRAY['neynar', 'ens']) AS s`,
          [new Date()],
        );
        assert.match(await plan(tx), /Seq Scan on live_answers/, "the hazard: the plan made on the empty table scans it whole");
        await tx.query(sql("session_custom_plans"));
        const custom = await plan(tx);
        assert.doesNotMatch(custom, /Seq Scan/, custom);
        assert.match(custom, /live_answers_pkey/, custom);
        await tx.exec("DEALLOCATE cache_probe");
        await tx.query("DELETE FROM live_answers");
      },
      { bulk: true },
    );
  });

  test("a job's new wallets are in reverse_entries, counted, when it completes; nothing stays queued", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = [...Array.from({ length: 24 }, (_, i) => liveFarcaster(8000 + i)), liveEns(8100), unknown(8200)];
    const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
    assert.deepEqual(await bench.worker.runOnce(), { jobId: id, outcome: "completed" });
    for (let i = 0; i < 24; i++) {
      assert.deepEqual(await reverseOf(db, "farcaster", `live${8000 + i}`), { wallets: [liveFarcaster(8000 + i)], counted: 1 });
    }
    assert.deepEqual(await reverseOf(db, "twitter", "livex8000"), { wallets: [liveFarcaster(8000)], counted: 1 });
    const [left] = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM reverse_pending WHERE job_id = $1", [id]);
    assert.equal(left.n, 0);
    const reverse = await expectStatus(await bench.server.request("/api/v1/reverse/farcaster/live8003", { key: customer.apiKey }), 200);
    assert.deepEqual(reverse.body.data.map((r: { wallet: string }) => r.wallet), [liveFarcaster(8003)]);
  });

  test("a job that fails after writing chunks leaves its written wallets in reverse_entries", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = Array.from({ length: 30 }, (_, i) => liveFarcaster(8300 + i));
    const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
    // the first two chunks (of 10) go through; Neynar fails for good on every question about the
    // third, whenever it is asked (chunks are resolved ahead, so not always after the first two)
    const third = new Set(wallets.slice(20));
    bench.neynar.behave({ failWhen: (url) => [...third].some((w) => url.toLowerCase().includes(w.toLowerCase())) });
    try {
      assert.deepEqual(await bench.worker.runOnce(), { jobId: id, outcome: "failed" });
    } finally {
      bench.neynar.behave({});
    }
    const [job] = await db.query<{ processed: number }>("SELECT processed FROM jobs WHERE id = $1", [id]);
    assert.equal(job.processed, 20, "the first two chunks were written");
    assert.deepEqual(await reverseOf(db, "farcaster", "live8300"), { wallets: [liveFarcaster(8300)], counted: 1 });
    const [left] = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM reverse_pending WHERE job_id = $1", [id]);
    assert.equal(left.n, 0);
  });

  test("a transaction deferring to a job queues its wallets; the flush refreshes them; other writers refresh at once", async () => {
    const { db } = get();
    const job = crypto.randomUUID();
    const link = async (tx: Db, wallet: string, handle: string) => {
      await tx.query("INSERT INTO wallets (address, checked_at, last_updated) VALUES ($1, $2, $2)", [wallet, clock.now()]);
      await tx.query(
        "INSERT INTO links (wallet, kind, value, route, observed_at, self_declared) VALUES ($1, 'twitter', $2, 'farcaster-x-verified', $3, false)",
        [wallet, handle, clock.now()],
      );
    };
    await db.transaction(async (tx) => {
      await tx.query(sql("reverse_pending_defer"), [job]);
      await link(tx, liveFarcaster(8800), "deferredone");
    });
    assert.deepEqual(await reverseOf(db, "twitter", "deferredone"), { wallets: [], counted: null }, "queued, not refreshed");
    // the same connection, next transaction: the setting was the transaction's alone
    await db.transaction((tx) => link(tx, liveFarcaster(8900), "otherwriter"));
    assert.deepEqual(await reverseOf(db, "twitter", "otherwriter"), { wallets: [liveFarcaster(8900)], counted: 1 });
    const [flushed] = await db.query<{ wallets: number }>(sql("reverse_pending_flush"), [job]);
    assert.equal(flushed.wallets, 1);
    assert.deepEqual(await reverseOf(db, "twitter", "deferredone"), { wallets: [liveFarcaster(8800)], counted: 1 });
  });

  test("a submission wakes an idle worker at once; a worker that cannot listen finds the job at its next poll", async () => {
    const { db } = get();
    const statusOf = async (id: string) => (await db.query<{ status: string }>("SELECT status FROM jobs WHERE id = $1", [id]))[0].status;
    const workers: Array<[string, Worker]> = [
      ["listening, next poll in a minute", createWorker({ ...bench.runDeps, idleMs: 60_000 })],
      ["without notifications, polling", createWorker({ ...bench.runDeps, db: { ...db, listen: undefined }, idleMs: 50 })],
    ];
    for (const [label, worker] of workers) {
      await worker.start();
      await new Promise((resolve) => setTimeout(resolve, 200)); // its first claim found nothing: idle
      const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
      const wallets = Array.from({ length: 15 }, (_, i) => liveFarcaster(8500 + i));
      const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
      const started = performance.now();
      try {
        while ((await statusOf(id)) !== "completed") {
          assert.ok(performance.now() - started < 10_000, `${label}: the job was not run within 10 s`);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await worker.stop();
      }
    }
  });

  test("completion bills what the chunks' checkpoints counted, or counts every wallet of a job that has no such count", async () => {
    const { db } = get();
    const matchedOf = async (id: string) => (await db.query<{ matched: number }>("SELECT matched FROM jobs WHERE id = $1", [id]))[0].matched;
    const wallets = [...Array.from({ length: 12 }, (_, i) => liveFarcaster(8600 + i)), liveEns(8650), unknown(8660)];
    for (const before13 of [false, true]) {
      const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
      const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
      // a job submitted before 00013_job_slices.sql has no count of its written chunks
      if (before13) await db.query("UPDATE jobs SET matched_written = NULL WHERE id = $1", [id]);
      assert.deepEqual(await bench.worker.runOnce(), { jobId: id, outcome: "completed" });
      assert.equal(await matchedOf(id), 12, before13 ? "counted at completion" : "counted by the checkpoints");
    }
  });
});
