// An Idempotency-Key is billed once whatever happens between its attempts: a call that debited
// and died before storing its answer, a takeover refused by the rate window or for want of
// credits, a claim given back after a failure once the debit had committed. Each retry reproduces
// the attempt's debit key; the one let through answers from the current identities, unbilled.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { eachDatabase } from "../support/db.ts";
import { createClock, createCustomer, json, startServer, type TestServer } from "../support/server.ts";
import { address, debitedTotal, debitsOf, importIndex, setRateWindow } from "../support/http.ts";
import { grantCredits, readCredits } from "../../src/ledger/accounts.ts";
import type { Db } from "../../src/db/types.ts";
import { failingDb } from "../support/failing-db.ts";

/** Wallets with a twitter link: each one a batch sends bills one match. */
const billable = (i: number) => address(i, "c1");

/**
 * The database as a server sees it that stops after its debit: the statements that store the
 * answer (and, with the release, the one that gives the claim back) fail as in a database fault,
 * so the call's claim is left as a killed process leaves it.
 */
function stopsAfterDebit(inner: Db, failing: string[]): Db {
  return failingDb(inner, (text) =>
    failing.some((name) => text.includes(name))
      ? Object.assign(new Error("Connection terminated unexpectedly"), { code: "CONNECTION_CLOSED" })
      : undefined,
  );
}

const STORE = "idempotent_responses_complete";
const RELEASE = "idempotent_responses_release";

eachDatabase("an Idempotency-Key billed once across crashes and refusals", (get) => {
  const clock = createClock("2026-11-20T12:00:05Z");
  let healthy: TestServer;
  let killed: TestServer;
  let released: TestServer;

  // an index of billable wallets and three servers on one database
  before(async () => {
    const { db } = get();
    const observed_at = new Date(clock.now().getTime() - 86_400_000).toISOString();
    await importIndex(
      db,
      Array.from({ length: 60 }, (_, i) => ({ wallet: billable(i), kind: "twitter", route: "x-signin", handle: `crash${i}`, observed_at })),
      clock.now(),
    );
    healthy = await startServer(db, { clock });
    killed = await startServer(stopsAfterDebit(db, [STORE, RELEASE]), { clock });
    released = await startServer(stopsAfterDebit(db, [STORE]), { clock });
  });

  after(async () => {
    for (const s of [healthy, killed, released]) await s?.close();
  });

  function batch(server: TestServer, apiKey: string, idempotencyKey: string, wallets: string[]) {
    return server.request("/api/v1/batch", {
      method: "POST",
      key: apiKey,
      headers: { "Content-Type": "application/json", "Idempotency-Key": idempotencyKey },
      body: JSON.stringify({ wallets }),
    });
  }

  /** A fresh minute (clock at :05 of it), so one test's window never reaches into the next. */
  function nextMinute() {
    const t = clock.now().getTime();
    clock.set(new Date(t - (t % 60_000) + 60_000 + 5_000));
  }

  /** The minute window filled as if other calls of the account had used it all. */
  async function fillMinuteWindow(accountId: string) {
    const now = clock.now();
    const minute = new Date(now.getTime() - (now.getTime() % 60_000)).toISOString();
    const day = `${now.toISOString().slice(0, 10)}T00:00:00Z`;
    const month = `${now.toISOString().slice(0, 7)}-01T00:00:00Z`;
    await setRateWindow(get().db, accountId, { minuteStart: minute, minuteUsed: 60, dayStart: day, dayUsed: 60, monthStart: month, monthUsed: 60 });
  }

  test("killed after the debit, the takeover refused by the rate window, the next retry let through: one debit", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = [billable(0), billable(1)];

    const crashed = await batch(killed, apiKey, "crash-429", wallets);
    assert.ok(crashed.status >= 500, `the first attempt dies after its debit: ${crashed.status}`);
    assert.equal(await debitedTotal(db, accountId), 2, "the first attempt debited its two matches");

    clock.advance(16_000); // the dead call's claim expires
    await fillMinuteWindow(accountId);
    const refused = await batch(healthy, apiKey, "crash-429", wallets);
    assert.equal(refused.status, 429, await refused.clone().text());
    assert.equal(await debitedTotal(db, accountId), 2);

    nextMinute();
    const answered = await batch(healthy, apiKey, "crash-429", wallets);
    const body = await json(answered.clone());
    assert.equal(answered.status, 200, JSON.stringify(body));
    assert.equal(answered.headers.get("idempotent-replayed"), null, "answered afresh: nothing was stored");
    assert.deepEqual(body.data.map((row: { wallet: string; twitter?: { handle: string } }) => [row.wallet, row.twitter?.handle]), [
      [billable(0), "crash0"],
      [billable(1), "crash1"],
    ]);
    assert.equal(body.meta.matched, 2);
    const debits = await debitsOf(db, accountId);
    assert.equal(debits.length, 1, `one debit row: ${JSON.stringify(debits)}`);
    assert.equal(debits[0].matches, 2);
    assert.match(debits[0].call_key, /^batch-idem:crash-429@/);

    nextMinute();
    const replayed = await batch(healthy, apiKey, "crash-429", wallets);
    assert.equal(replayed.status, 200);
    assert.equal(replayed.headers.get("idempotent-replayed"), "true");
    assert.equal(await replayed.text(), await answered.text());
    assert.equal(await debitedTotal(db, accountId), 2);
  });

  test("killed after the debit that spent the last credits, the takeover refused with 402, retried after a top-up: one debit", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 1 }], now: clock.now() });
    const wallets = Array.from({ length: 12 }, (_, i) => billable(10 + i));

    const crashed = await batch(killed, apiKey, "crash-402", wallets);
    assert.ok(crashed.status >= 500, `the first attempt dies after its debit: ${crashed.status}`);
    assert.equal(await debitedTotal(db, accountId), 12);
    assert.equal((await readCredits(db, accountId, clock.now())).available, 0);

    clock.advance(16_000);
    const refused = await batch(healthy, apiKey, "crash-402", wallets);
    const refusal = await json(refused);
    assert.equal(refused.status, 402, JSON.stringify(refusal));
    assert.equal(refusal.code, "NO_CREDITS");

    await grantCredits(db, { accountId, pack: "Agent", quantity: 1, grantKey: `topup-${crypto.randomUUID()}`, now: clock.now() });
    clock.advance(1_000);
    const answered = await batch(healthy, apiKey, "crash-402", wallets);
    const body = await json(answered);
    assert.equal(answered.status, 200, JSON.stringify(body));
    assert.equal(body.data.length, 12);
    assert.ok(body.data.every((row: { twitter?: unknown } | null) => row?.twitter), "every wallet answered with its record");
    assert.equal(await debitedTotal(db, accountId), 12, "the retry was not billed again");
    assert.equal((await readCredits(db, accountId, clock.now())).available, 12, "the top-up is untouched");
  });

  test("a claim given back after the debit committed (storing the answer failed): the retry is answered, not billed", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = [billable(30), billable(31), billable(32)];

    const failed = await batch(released, apiKey, "released-1", wallets);
    assert.ok(failed.status >= 500, `storing the answer failed: ${failed.status}`);
    assert.equal(await debitedTotal(db, accountId), 3);

    // no waiting for an expiry: the claim was given back
    clock.advance(1_000);
    const answered = await batch(healthy, apiKey, "released-1", wallets);
    const body = await json(answered.clone());
    assert.equal(answered.status, 200, JSON.stringify(body));
    assert.equal(answered.headers.get("idempotent-replayed"), null);
    assert.equal(body.data.length, 3);
    assert.equal(await debitedTotal(db, accountId), 3, "billed once");

    // a refusal in between gives the claim back too, and still forgets nothing
    const again = await batch(healthy, apiKey, "released-1", wallets);
    assert.equal(again.headers.get("idempotent-replayed"), "true");
    assert.equal(await debitedTotal(db, accountId), 3);
  });

  test("a refused retry, then a crash-free run: a refusal between attempts never starts a new debit key", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    const wallets = [billable(40), billable(41)];

    assert.ok((await batch(killed, apiKey, "twice-refused", wallets)).status >= 500);
    clock.advance(16_000);
    await fillMinuteWindow(accountId);
    assert.equal((await batch(healthy, apiKey, "twice-refused", wallets)).status, 429);
    assert.equal((await batch(healthy, apiKey, "twice-refused", wallets)).status, 429, "refused again: the key is still not forgotten");
    nextMinute();
    assert.equal((await batch(healthy, apiKey, "twice-refused", wallets)).status, 200);
    assert.equal(await debitedTotal(db, accountId), 2);
    assert.equal((await debitsOf(db, accountId)).length, 1);
  });

  test("another body under a key whose attempt debited is refused as a reuse, and bills nothing", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });

    assert.ok((await batch(killed, apiKey, "reused-1", [billable(50)])).status >= 500);
    assert.equal(await debitedTotal(db, accountId), 1);
    clock.advance(16_000);
    const other = await batch(healthy, apiKey, "reused-1", [billable(51), billable(52)]);
    const body = await json(other);
    assert.equal(other.status, 409, JSON.stringify(body));
    assert.equal(body.code, "IDEMPOTENCY_KEY_REUSED");
    assert.equal(await debitedTotal(db, accountId), 1, "the other body did not ride on the first one's debit, nor bill");

    // the first body itself is still answered on its debit
    const same = await batch(healthy, apiKey, "reused-1", [billable(50)]);
    assert.equal(same.status, 200, await same.clone().text());
    assert.equal(await debitedTotal(db, accountId), 1);
  });

  test("the key reused after 24 hours is a new request, billed anew", async () => {
    const { db } = get();
    nextMinute();
    const { apiKey, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 10 }], now: clock.now() });
    assert.ok((await batch(killed, apiKey, "day-old", [billable(55)])).status >= 500);
    clock.advance(24 * 3_600_000 + 60_000);
    const later = await batch(healthy, apiKey, "day-old", [billable(55)]);
    assert.equal(later.status, 200, await later.clone().text());
    assert.equal(await debitedTotal(db, accountId), 2, "a day later the key starts a new attempt");
  });
});
