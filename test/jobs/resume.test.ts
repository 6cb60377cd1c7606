// Leases and resume in process: a worker stopped mid-job leaves its checkpoint; another takes the
// job over only after the lease runs out, carries on from the checkpoint, and the job is billed
// once; two workers never hold the same job.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { sql } from "../../src/db/queries.ts";
import { runJob } from "../../src/jobs/run.ts";
import { claimJob, createWorker } from "../../src/jobs/worker.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer } from "../support/server.ts";
import { debitsOf, expectStatus } from "../support/http.ts";
import { liveFarcaster, poll, startJobBench, submit, type JobBench } from "./support.ts";

eachDatabase("job leases and resume", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let bench: JobBench;

  before(async () => {
    bench = await startJobBench(get().db, clock, { JOB_CHUNK_SIZE: "10", JOB_LEASE_SECONDS: "60" });
  });
  after(() => bench.close());

  test("a worker stopped mid-job is resumed from its checkpoint after the lease expires, with exactly one debit", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = Array.from({ length: 45 }, (_, i) => liveFarcaster(700 + i));
    const sub = await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202);
    const id = sub.body.data.job_id;

    const first = await claimJob(bench.runDeps, "worker-a");
    assert.equal(first?.id, id);
    let checks = 0;
    assert.equal(await runJob(bench.runDeps, first!, { shouldStop: () => ++checks > 2 }), "stopped");
    const mid = await expectStatus(await poll(bench.server, customer.apiKey, id), 200);
    assert.equal(mid.body.data.status, "processing");
    assert.deepEqual(mid.body.data.progress, { processed: 20, total: 45, stage: null });
    assert.equal(mid.body.data.wallets, undefined, "no results before completion");
    const askedBefore = bench.neynar.asked.flat().length;
    // two chunks are resolved ahead of the write: the third (20-29) was asked, then dropped at the stop
    assert.equal(askedBefore, 30);

    assert.equal(await claimJob(bench.runDeps, "worker-b"), null, "the lease still holds");
    clock.advance(61_000);
    const second = await claimJob(bench.runDeps, "worker-b");
    assert.equal(second?.id, id);
    assert.equal(second?.processed, 20);
    assert.equal(second?.attempts, 2);
    assert.equal(second?.stageStats.index?.wallets, 20, "stage figures carried over from the first run");
    assert.equal(await runJob(bench.runDeps, second!), "completed");
    // chunks resolve two at a time, so their questions may interleave: compared as sets
    assert.deepEqual(
      bench.neynar.asked.flat().slice(-25).sort(),
      wallets.slice(20).sort(),
      "resumed from the checkpoint, not from the start",
    );

    // the first worker wakes up and tries to carry on or complete: it no longer holds the job
    assert.equal(await runJob(bench.runDeps, first!), "lease_lost");
    const [again] = await db.query<{ completed: boolean }>(sql("jobs_complete"), [id, "worker-a", clock.now()]);
    assert.equal(again.completed, false);
    const [rerun] = await db.query<{ completed: boolean }>(sql("jobs_complete"), [id, "worker-b", clock.now()]);
    assert.equal(rerun.completed, false, "a completed job cannot complete twice");

    const done = await expectStatus(await poll(bench.server, customer.apiKey, id), 200);
    assert.equal(done.body.data.status, "completed");
    assert.equal(done.body.meta.matched, 45);
    const debits = await debitsOf(db, customer.accountId);
    assert.deepEqual(debits.map((d) => [d.call_key, d.matches]), [[`job:${id}`, 45]], "exactly one debit, equal to meta.matched");
  });

  test("two workers never process the same job", async () => {
    const { db } = get();
    const jobs: string[] = [];
    const firstAsked = bench.neynar.asked.flat().length;
    for (let n = 0; n < 4; n++) {
      const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
      const wallets = Array.from({ length: 30 }, (_, i) => liveFarcaster(1000 + n * 100 + i));
      jobs.push((await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id);
    }
    const a = createWorker({ ...bench.runDeps, owner: "worker-a" });
    const b = createWorker({ ...bench.runDeps, owner: "worker-b" });
    const ran = await Promise.all([a.runOnce(), b.runOnce(), a.runOnce(), b.runOnce()].map((p) => p));
    const more = [await a.runOnce(), await b.runOnce()].filter((r) => r !== null);
    const all = [...ran, ...more].filter((r) => r !== null);
    assert.deepEqual(all.map((r) => r!.jobId).sort(), [...jobs].sort(), "each job claimed exactly once");
    assert.ok(all.every((r) => r!.outcome === "completed"));
    const asked = bench.neynar.asked.flat().slice(firstAsked);
    assert.equal(asked.length, 120);
    assert.equal(new Set(asked).size, 120, "no wallet asked twice");
    const rows = await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM debits WHERE call_key = ANY($1::text[])", [
      jobs.map((j) => `job:${j}`),
    ]);
    assert.equal(rows[0].n, 4);

    // racing claims on one pending job: one wins
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    await submit(bench.server, customer.apiKey, Array.from({ length: 11 }, (_, i) => liveFarcaster(2000 + i)));
    const claims = await Promise.all(["w1", "w2", "w3", "w4"].map((owner) => claimJob(bench.runDeps, owner)));
    assert.equal(claims.filter((c) => c !== null).length, 1);
    assert.equal(await runJob(bench.runDeps, claims.find((c) => c !== null)!), "completed");
  });

  test("a worker stopped by a shutdown gives its job back: another claims it at once and resumes from the checkpoint", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = Array.from({ length: 60 }, (_, i) => liveFarcaster(4100 + i));
    const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
    const processed = async () => (await db.query<{ processed: number }>("SELECT processed FROM jobs WHERE id = $1", [id]))[0].processed;
    bench.neynar.behave({ delayMs: 100 });
    try {
      const worker = createWorker({ ...bench.runDeps, owner: "shutting-down" });
      const running = worker.runOnce();
      while ((await processed()) === 0) await new Promise((r) => setTimeout(r, 5));
      await worker.stop(); // what SIGTERM does
      assert.equal((await running)?.outcome, "stopped");
    } finally {
      bench.neynar.behave({});
    }
    const at = await processed();
    assert.ok(at > 0 && at < 60, `stopped mid-job at ${at}`);
    // no clock advance: the lease was released, not left to run out
    const next = await claimJob(bench.runDeps, "successor");
    assert.equal(next?.id, id);
    assert.equal(next?.processed, at);
    assert.equal(await runJob(bench.runDeps, next!), "completed");
    const done = await expectStatus(await poll(bench.server, customer.apiKey, id), 200);
    assert.equal(done.body.data.status, "completed");
    assert.deepEqual((await debitsOf(db, customer.accountId)).map((d) => [d.call_key, d.matches]), [[`job:${id}`, 60]]);
  });

  test("a job whose workers die after every checkpoint keeps going past five claims and completes, billed once", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 20 }], now: clock.now() });
    const wallets = Array.from({ length: 200 }, (_, i) => liveFarcaster(2300 + i));
    const id = (await expectStatus(await submit(bench.server, customer.apiKey, wallets), 202)).body.data.job_id;
    const processed = async () => (await db.query<{ processed: number }>("SELECT processed FROM jobs WHERE id = $1", [id]))[0].processed;
    // workers each run until the checkpoint moves, then stop holding the lease, as if killed
    bench.neynar.behave({ delayMs: 150 });
    let claims = 0;
    try {
      for (let at = 0; at < 200 && claims < 40; at = await processed()) {
        claims++;
        const worker = createWorker({ ...bench.runDeps, owner: `mortal-${claims}` });
        let finished = false;
        const running = worker.runOnce().finally(() => (finished = true));
        while (!finished && (await processed()) === at) await new Promise((r) => setTimeout(r, 5));
        await worker.stop();
        const ran = await running;
        assert.equal(ran?.jobId, id);
        assert.notEqual(ran?.outcome, "failed", `claim ${claims} at ${at}/200`);
        clock.advance(61_000);
      }
    } finally {
      bench.neynar.behave({});
    }
    assert.ok(claims >= 7, `claimed ${claims} times`);
    const done = await expectStatus(await poll(bench.server, customer.apiKey, id), 200);
    assert.equal(done.body.data.status, "completed");
    assert.deepEqual((await debitsOf(db, customer.accountId)).map((d) => [d.call_key, d.matches]), [[`job:${id}`, 200]]);
  });

  test("a job claimed again and again without progress is failed, not retried forever, nothing billed", async () => {
    const { db } = get();
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const sub = await expectStatus(
      await submit(bench.server, customer.apiKey, Array.from({ length: 11 }, (_, i) => liveFarcaster(2100 + i))),
      202,
    );
    const id = sub.body.data.job_id;
    // one worker makes progress and dies; then five each claim it and die at the same position
    const first = await claimJob(bench.runDeps, "doomed-0");
    let checks = 0;
    assert.equal(await runJob(bench.runDeps, first!, { shouldStop: () => ++checks > 1 }), "stopped");
    clock.advance(61_000);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const job = await claimJob(bench.runDeps, `doomed-${attempt}`);
      assert.equal(job?.processed, 10);
      assert.equal(job?.stalledAttempts, attempt);
      clock.advance(61_000);
    }
    const worker = createWorker({ ...bench.runDeps, owner: "sixth" });
    assert.deepEqual(await worker.runOnce(), { jobId: id, outcome: "failed" });
    const failed = await expectStatus(await poll(bench.server, customer.apiKey, id), 200);
    assert.equal(failed.body.data.status, "failed");
    assert.deepEqual(await debitsOf(db, customer.accountId), []);
  });
});
