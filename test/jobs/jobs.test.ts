// POST /jobs and GET /jobs/{id} through a real server, with an in-process worker and fake live
// upstreams: the inline path, pending -> processing -> completed, live resolution written to the
// index, the cache, paging, errors, failure without billing, and one debit equal to meta.matched.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer } from "../support/server.ts";
import { loadFixtures, W } from "../support/fixtures.ts";
import { assertErrorBody, debitsOf, expectStatus, setRateWindow } from "../support/http.ts";
import { liveEns, liveFarcaster, poll, startJobBench, submit, unknown, type JobBench } from "./support.ts";

eachDatabase("jobs", (get) => {
  const clock = createClock("2026-11-20T12:00:30Z");
  let bench: JobBench;
  let key: string;
  let accountId: string;

  before(async () => {
    const { db } = get();
    await loadFixtures(db, clock.now());
    bench = await startJobBench(db, clock);
  });
  after(() => bench.close());

  // each test its own account (one active job each) and its own minute
  beforeEachCustomer();
  function beforeEachCustomer() {
    test.beforeEach(async () => {
      clock.advance(60_000);
      ({ apiKey: key, accountId } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() }));
    });
  }

  async function jobDebits(jobId: string) {
    return (await debitsOf(get().db, accountId)).filter((d) => d.call_key === `job:${jobId}`);
  }

  test("10 addresses or fewer run inline: completed at once, live sources consulted, billed once", async () => {
    const wallets = [W.full, liveFarcaster(2), liveEns(3), unknown(1), W.ensOnly, W.empty, W.full.toUpperCase().replace("0X", "0x")];
    const res = await expectStatus(await submit(bench.server, key, wallets), 202);
    assert.equal(res.body.data.status, "completed");
    assert.equal(res.body.data.wallets, 6, "deduplicated");
    assert.equal(res.body.data.status_url, `${bench.server.config.publicUrl}/api/v1/jobs/${res.body.data.job_id}`);
    assert.equal(res.body.meta.submitted_at, clock.now().toISOString());
    assert.equal(res.headers.get("x-ratelimit-remaining"), "59", "rate weight 1");

    const page = await expectStatus(await poll(bench.server, key, res.body.data.job_id), 200);
    const { data, meta } = page.body;
    assert.equal(data.status, "completed");
    assert.deepEqual(data.progress, { processed: 6, total: 6, stage: null });
    assert.deepEqual(data.wallets, [W.full, liveFarcaster(2), liveEns(3), unknown(1), W.ensOnly, W.empty]);
    assert.equal(data.results[0].twitter.handle, "alice");
    assert.deepEqual(data.results[1].farcaster, { username: "live2", url: "https://farcaster.xyz/live2", followers: 2, fid: 1002, verified: true });
    assert.equal(data.results[1].twitter.handle, "livex2");
    assert.deepEqual(data.results[1].sources, ["farcaster"]);
    assert.deepEqual(data.results[2], { wallet: liveEns(3), ens_name: "live3.eth", sources: ["onchain"] });
    assert.equal(data.results[3], null);
    assert.equal(data.results[4].ens_name, "eve.eth");
    assert.equal(data.results[5], null);
    assert.deepEqual(meta, { requested: 6, matched: 2, found: 4, not_found: 2, offset: 0, limit: 1000, next_offset: null });
    const debits = await jobDebits(data.job_id);
    assert.equal(debits.length, 1);
    assert.equal(debits[0].matches, meta.matched, "billed total equals meta.matched");

    // what the live sources found is in the index now; what they did not is checked-empty
    const single = await expectStatus(await bench.server.request(`/api/v1/wallet/${liveFarcaster(2)}`, { key }), 200);
    assert.equal(single.body.data.farcaster.fid, 1002);
    const miss = await expectStatus(await bench.server.request(`/api/v1/wallet/${unknown(1)}`, { key }), 200);
    assert.deepEqual(miss.body.meta, { wallet: unknown(1), found: false, checked_at: clock.now().toISOString() });
  });

  test("more than 10 go pending to the worker: pending -> completed, 409 while active, one debit", async () => {
    const wallets = [...Array.from({ length: 20 }, (_, i) => liveFarcaster(100 + i)), ...Array.from({ length: 5 }, (_, i) => unknown(100 + i))];
    const sub = await expectStatus(await submit(bench.server, key, wallets), 202);
    const id = sub.body.data.job_id;
    assert.equal(sub.body.data.status, "pending");

    const pending = await expectStatus(await poll(bench.server, key, id), 200);
    assert.deepEqual(pending.body.data, {
      job_id: id,
      status: "pending",
      progress: { processed: 0, total: 25, stage: null },
      created_at: clock.now().toISOString(),
      started_at: null,
      completed_at: null,
    });
    assert.deepEqual(pending.body.meta, { requested: 25, matched: 0 });
    assert.deepEqual(await debitsOf(get().db, accountId), [], "nothing billed at submission");

    const again = await expectStatus(await submit(bench.server, key, [liveFarcaster(1)]), 409);
    assertErrorBody(again, "JOB_ALREADY_ACTIVE");
    assert.match(again.body.error, new RegExp(id));

    clock.advance(1000);
    const ran = await bench.worker.runOnce();
    assert.deepEqual(ran, { jobId: id, outcome: "completed" });
    const done = await expectStatus(await poll(bench.server, key, id), 200);
    assert.equal(done.body.data.status, "completed");
    assert.equal(done.body.data.started_at, clock.now().toISOString());
    assert.equal(done.body.data.completed_at, clock.now().toISOString());
    assert.equal(done.body.meta.matched, 20);
    assert.equal(done.body.meta.found, 20);
    const debits = await jobDebits(id);
    assert.equal(debits.length, 1);
    assert.equal(debits[0].matches, 20);
    assert.equal(await bench.worker.runOnce(), null, "nothing left to claim");

    // a resend after completion is a new job, billed again
    clock.advance(60_000);
    const resend = await expectStatus(await submit(bench.server, key, wallets), 202);
    assert.notEqual(resend.body.data.job_id, id);
    await bench.worker.runOnce();
    assert.equal((await jobDebits(resend.body.data.job_id))[0].matches, 20);
  });

  test("the cache: earlier live answers, found or not, are reused within the TTL", async () => {
    const wallets = Array.from({ length: 8 }, (_, i) => unknown(200 + i));
    const before = bench.neynar.asked.flat().length;
    await expectStatus(await submit(bench.server, key, wallets), 202);
    assert.equal(bench.neynar.asked.flat().length - before, 8);
    clock.advance(3_600_000);
    await expectStatus(await submit(bench.server, key, wallets), 202);
    assert.equal(bench.neynar.asked.flat().length - before, 8, "answered from the cache");
    clock.advance(8 * 86_400_000);
    await expectStatus(await submit(bench.server, key, wallets), 202);
    assert.equal(bench.neynar.asked.flat().length - before, 16, "past the TTL the upstream is asked again");
  });

  test("paging a 2,500-address job: pages of 1000, aligned by position, next_offset until null", async () => {
    ({ apiKey: key, accountId } = await createCustomer(get().db, { packs: [{ pack: "Agent", quantity: 30 }], now: clock.now() }));
    const wallets = Array.from({ length: 2500 }, (_, i) => (i % 5 === 0 ? liveFarcaster(5000 + i) : unknown(5000 + i)));
    const sub = await expectStatus(await submit(bench.server, key, wallets), 202);
    const id = sub.body.data.job_id;
    assert.deepEqual((await bench.worker.runOnce())?.outcome, "completed");
    const seen: string[] = [];
    let found = 0;
    let offset: number | null = 0;
    const offsets: number[] = [];
    while (offset !== null) {
      offsets.push(offset);
      const page = await expectStatus(await poll(bench.server, key, id, offset ? `?offset=${offset}` : ""), 200);
      const { data, meta } = page.body;
      assert.equal(data.wallets.length, data.results.length);
      data.results.forEach((r: { wallet: string } | null, i: number) => {
        if (r) assert.equal(r.wallet, data.wallets[i], "results align with wallets");
      });
      assert.equal(meta.found + meta.not_found, data.wallets.length);
      assert.equal(meta.limit, 1000);
      assert.equal(meta.requested, 2500);
      assert.equal(meta.matched, 500);
      seen.push(...data.wallets);
      found += meta.found;
      offset = meta.next_offset;
    }
    assert.deepEqual(offsets, [0, 1000, 2000]);
    assert.deepEqual(seen, wallets);
    assert.equal(found, 500);
    const small = await expectStatus(await poll(bench.server, key, id, "?offset=2495&limit=10"), 200);
    assert.equal(small.body.data.wallets.length, 5);
    assert.equal(small.body.meta.next_offset, null);
    const debits = await jobDebits(id);
    assert.equal(debits.reduce((n, d) => n + d.matches, 0), 500, "billed total equals meta.matched");
    for (const q of ["?limit=1001", "?limit=0", "?offset=-1", "?offset=abc"]) {
      assertErrorBody(await expectStatus(await poll(bench.server, key, id, q), 400, q), "INVALID_PARAMETER");
    }
  });

  test("an upstream that keeps failing fails the job: generic error, nothing billed, a new job is allowed", async () => {
    bench.neynar.behave({ fail: Infinity });
    try {
      const wallets = Array.from({ length: 12 }, (_, i) => liveFarcaster(300 + i));
      const sub = await expectStatus(await submit(bench.server, key, wallets), 202);
      const id = sub.body.data.job_id;
      assert.deepEqual(await bench.worker.runOnce(), { jobId: id, outcome: "failed" });
      const failed = await expectStatus(await poll(bench.server, key, id), 200);
      assert.equal(failed.body.data.status, "failed");
      assert.equal(failed.body.data.error, "The job failed and nothing was billed: submit the list again as a new job");
      assert.equal(failed.body.data.wallets, undefined);
      assert.doesNotMatch(failed.text, /neynar|HTTP 500/i, "no upstream detail");
      assert.deepEqual(await debitsOf(get().db, accountId), []);
      // and inline: the submission answers failed
      clock.advance(60_000);
      const inline = await expectStatus(await submit(bench.server, key, [liveFarcaster(400)]), 202);
      assert.equal(inline.body.data.status, "failed");
    } finally {
      bench.neynar.behave({});
    }
  });

  test("rate-limited and briefly failing upstreams are retried with backoff and the job completes", async () => {
    bench.neynar.behave({ rateLimit: 2 });
    const first = await expectStatus(await submit(bench.server, key, [liveFarcaster(500), liveFarcaster(501)]), 202);
    assert.equal(first.body.data.status, "completed");
    clock.advance(60_000);
    bench.neynar.behave({ delayMs: 300 });
    const slow = await expectStatus(await submit(bench.server, key, [liveFarcaster(503)]), 202);
    assert.equal(slow.body.data.status, "completed", "a slow upstream within the timeout");
    clock.advance(60_000);
    bench.rpc.behave({ fail: 2 });
    const second = await expectStatus(await submit(bench.server, key, [liveEns(502)]), 202);
    assert.equal(second.body.data.status, "completed");
    bench.neynar.behave({});
    bench.rpc.behave({});
    const page = await expectStatus(await poll(bench.server, key, second.body.data.job_id), 200);
    assert.equal(page.body.data.results[0].ens_name, "live502.eth");
  });

  test("errors: body, addresses, submission limit, no credits, unknown and foreign jobs", async () => {
    const raw = (body: string) =>
      bench.server.request("/api/v1/jobs", { method: "POST", key, headers: { "Content-Type": "application/json" }, body });
    for (const bad of ["not json", "{}", '{"wallets": []}', '{"wallets": "x"}']) {
      assertErrorBody(await expectStatus(await raw(bad), 400, bad), "INVALID_REQUEST");
    }
    const huge = `{"wallets":[${Array.from({ length: 110_000 }, (_, i) => `"${unknown(i)}"`).join(",")}]}`;
    const tooLarge = await expectStatus(await raw(huge), 413);
    assertErrorBody(tooLarge, "INVALID_REQUEST");

    const invalid = await expectStatus(await submit(bench.server, key, [W.full, "0x12", 7, "nope"]), 400);
    assertErrorBody(invalid, "INVALID_ADDRESS");
    assert.match(invalid.body.error, /"0x12", 7, "nope"/);

    // 10 packs of 12 = 120 credits: at most 1,200 addresses
    const over = await expectStatus(await submit(bench.server, key, Array.from({ length: 1201 }, (_, i) => unknown(i))), 402);
    assertErrorBody(over, "SUBMISSION_LIMIT_EXCEEDED");
    assert.match(over.body.error, /maximum is 1200/);
    assert.equal(over.headers.get("x-ratelimit-remaining"), "60", "refusals spend no rate unit");

    const broke = await createCustomer(get().db, { now: clock.now() });
    assertErrorBody(await expectStatus(await submit(bench.server, broke.apiKey, [unknown(1)]), 402), "NO_CREDITS");
    assertErrorBody(await expectStatus(await submit(bench.server, "wid_live_" + "x".repeat(32), [unknown(1)]), 401), "UNAUTHORIZED");

    const mine = await expectStatus(await submit(bench.server, key, [unknown(1)]), 202);
    const id = mine.body.data.job_id;
    const other = await createCustomer(get().db, { packs: [{ pack: "Agent" }], now: clock.now() });
    const foreign = await expectStatus(await poll(bench.server, other.apiKey, id), 404);
    const missing = await expectStatus(await poll(bench.server, key, crypto.randomUUID()), 404);
    const notUuid = await expectStatus(await poll(bench.server, key, "nope"), 404);
    for (const r of [foreign, missing, notUuid]) assertErrorBody(r, "JOB_NOT_FOUND");
    assert.equal(foreign.body.error, missing.body.error, "another account's job looks exactly like an unknown one");

    // the poll is free and works at zero balance: the broke account polls its own (none) and gets 404, not 402
    assertErrorBody(await expectStatus(await poll(bench.server, broke.apiKey, id), 404), "JOB_NOT_FOUND");
    assertErrorBody(await expectStatus(await bench.server.request("/api/v1/jobs", { key }), 405), "METHOD_NOT_ALLOWED");

    // an exhausted minute window refuses a submission (429) while the poll, weight 0, still answers
    await expectStatus(await poll(bench.server, key, id), 200);
    clock.advance(60_000);
    const t = clock.now();
    const minute = new Date(t.getTime() - (t.getTime() % 60_000)).toISOString();
    await setRateWindow(get().db, accountId, {
      minuteStart: minute, minuteUsed: 60,
      dayStart: `${minute.slice(0, 10)}T00:00:00Z`, dayUsed: 60,
      monthStart: `${minute.slice(0, 7)}-01T00:00:00Z`, monthUsed: 60,
    });
    assertErrorBody(await expectStatus(await submit(bench.server, key, [unknown(2)]), 429), "RATE_LIMITED");
    await expectStatus(await poll(bench.server, key, id), 200);
  });

  test("the poll is free on both meters and answers at zero balance; free-allowance accounts see followers as null", async () => {
    const free = await createCustomer(get().db, { email: `free-${crypto.randomUUID()}@example.com`, now: clock.now() });
    const sub = await expectStatus(await submit(bench.server, free.apiKey, [W.full, liveFarcaster(600)]), 202);
    const id = sub.body.data.job_id;
    const remaining = sub.headers.get("x-ratelimit-remaining");
    // spend the free allowance down to nothing
    await get().db.query("SELECT debit_matches($1, 'drain', 200, $2)", [free.accountId, clock.now()]);
    const page = await expectStatus(await poll(bench.server, free.apiKey, id), 200);
    assert.equal(page.headers.get("x-ratelimit-remaining"), remaining, "weight 0");
    assert.equal(page.body.data.results[0].farcaster.followers, null);
    assert.equal(page.body.data.results[1].farcaster.followers, null);
    assert.equal(page.body.data.results[1].farcaster.fid, 1600);
  });

  test("an unmetered account has no submission limit and is never debited", async () => {
    await get().db.query("UPDATE accounts SET unmetered = true WHERE id = $1", [accountId]);
    const wallets = [W.full, liveFarcaster(700), ...Array.from({ length: 1300 }, (_, i) => unknown(7000 + i))];
    const sub = await expectStatus(await submit(bench.server, key, wallets), 202, "more than 10 times the pack");
    assert.deepEqual((await bench.worker.runOnce())?.outcome, "completed");
    const page = await expectStatus(await poll(bench.server, key, sub.body.data.job_id, "?limit=2"), 200);
    assert.equal(page.body.meta.matched, 2);
    assert.equal(page.body.data.results[1].farcaster.followers, 700);
    assert.deepEqual(await debitsOf(get().db, accountId), []);
  });
});
