// POST /batch: deduplication, meta, body checks before authentication, size rules, idempotency.
import { test } from "node:test";
import assert from "node:assert/strict";
import { request as httpRequest } from "node:http";
import { eachDatabase } from "../support/db.ts";
import { fixtureSuite, json } from "../support/server.ts";
import { W } from "../support/fixtures.ts";

eachDatabase("POST /batch", (get) => {
  const suite = fixtureSuite(get);
  // every test starts in a fresh minute (nextMinute) so the 60-unit window never interferes
  const { nextMinute } = suite;

  function batch(body: unknown, headers: Record<string, string> = {}) {
    return suite.server.request("/api/v1/batch", {
      method: "POST",
      key: suite.key,
      headers: { "Content-Type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    });
  }

  async function debited() {
    const [row] = await get().db.query<{ n: number }>(
      "SELECT coalesce(sum(matches), 0)::integer AS n FROM debits WHERE account_id = $1",
      [suite.accountId],
    );
    return row.n;
  }

  test("duplicates are removed in submission order; misses are null; meta counts add up", async () => {
    nextMinute();
    const before = await debited();
    const res = await batch({
      wallets: [W.neverSeen, W.full.toUpperCase().replace("0X", "0x"), W.ensOnly, W.full, W.stale, W.neverSeen, W.empty],
    });
    const body = await json(res);
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(
      body.data.map((row: { wallet: string } | null) => row?.wallet ?? null),
      [null, W.full, W.ensOnly, W.stale, null],
    );
    assert.deepEqual(body.meta, { requested: 5, found: 3, not_found: 2, matched: 2 });
    assert.equal((await debited()) - before, 2, "billed exactly meta.matched");
    assert.equal(res.headers.get("x-ratelimit-remaining"), String(60 - 7), "weight counts before deduplication");
  });

  test("batch rows carry identities only: no quality, agent or freshness, and no staleness headers", async () => {
    nextMinute();
    const res = await batch({ wallets: [W.full, W.stale, W.agent] });
    const body = await json(res);
    const full = body.data[0];
    assert.deepEqual(Object.keys(full).sort(), ["ens_name", "farcaster", "sources", "twitter", "wallet"]);
    assert.deepEqual(full.farcaster, { username: "alice", url: "https://farcaster.xyz/alice", followers: 100, fid: 3, verified: true });
    assert.equal(res.headers.get("x-data-staleness"), null);
    assert.equal(res.headers.get("x-last-updated"), null);
    assert.equal(body.data[1].wallet, W.stale);
    assert.deepEqual(Object.keys(body.data[1]).sort(), ["sources", "twitter", "wallet"]);
  });

  test("body problems are 400 INVALID_REQUEST before authentication, without rate-limit headers", async () => {
    for (const bad of ["not json", "[]", "{}", '{"wallets": "0xabc"}', '{"wallets": []}', "null"]) {
      const res = await fetch(`${suite.server.url}/api/v1/batch`, { method: "POST", body: bad });
      const body = await json(res);
      assert.equal(res.status, 400, `${bad}: ${JSON.stringify(body)}`);
      assert.equal(body.code, "INVALID_REQUEST", bad);
      assert.equal(res.headers.get("x-ratelimit-limit"), null);
    }
  });

  test("a body over 1 MB is 413 measured on bytes read, even without Content-Length", async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${suite.server.url}/api/v1/batch`, { method: "POST", headers: { "Transfer-Encoding": "chunked" } }, (res) => {
        let text = "";
        res.on("data", (d) => (text += d));
        res.on("end", () => resolve({ status: res.statusCode!, body: text }));
      });
      req.on("error", (err) => ((err as NodeJS.ErrnoException).code === "EPIPE" ? undefined : reject(err)));
      req.write('{"wallets":["');
      for (let i = 0; i < 17; i++) req.write(chunk);
      req.end('"]}');
    });
    assert.equal(status, 413, body);
    const parsed = JSON.parse(body);
    assert.equal(parsed.code, "INVALID_REQUEST");
    assert.match(parsed.error, /too large/);
  });

  test("a body just under 1 MB is read and judged on its content", async () => {
    nextMinute();
    const padding = " ".repeat(1024 * 1024 - 200);
    const res = await batch(`{"wallets":["${W.full}"]}${padding}`);
    assert.equal(res.status, 200, await res.clone().text());
  });

  test("malformed entries reject the whole batch naming up to five, free, with rate-limit headers", async () => {
    nextMinute();
    const before = await debited();
    const res = await batch({ wallets: [W.full, "0x1", "0x2", 42, "0x4", "0x5", "0x6", "0x7"] });
    const body = await json(res);
    assert.equal(res.status, 400);
    assert.equal(body.code, "INVALID_ADDRESS");
    assert.match(body.error, /"0x1", "0x2", 42, "0x4", "0x5" and 2 more/);
    assert.equal(res.headers.get("x-ratelimit-remaining"), "60");
    assert.equal(await debited(), before);
  });

  test("more addresses than the plan allows is BATCH_SIZE_EXCEEDED, rejected whole and free", async () => {
    nextMinute();
    const before = await debited();
    const wallets = Array.from({ length: 51 }, (_, i) => `0x${i.toString(16).padStart(40, "0")}`);
    wallets[0] = W.full;
    const res = await batch({ wallets });
    const body = await json(res);
    assert.equal(res.status, 400);
    assert.equal(body.code, "BATCH_SIZE_EXCEEDED");
    assert.match(body.error, /maximum on the Developer plan is 50; split the list/);
    assert.equal(res.headers.get("x-ratelimit-remaining"), "60", "nothing counted");
    assert.equal(await debited(), before);
  });

  test("no key is 401 once the body is valid", async () => {
    const res = await fetch(`${suite.server.url}/api/v1/batch`, { method: "POST", body: JSON.stringify({ wallets: [W.full] }) });
    assert.equal(res.status, 401);
    assert.equal((await json(res)).code, "UNAUTHORIZED");
  });

  test("an Idempotency-Key replays the first response and bills once", async () => {
    nextMinute();
    const before = await debited();
    const body = { wallets: [W.full, W.twoHandles, W.ensOnly] };
    const first = await batch(body, { "Idempotency-Key": "order-42" });
    const firstText = await first.text();
    assert.equal(first.status, 200);
    const second = await batch(body, { "Idempotency-Key": "order-42" });
    assert.equal(second.status, 200);
    assert.equal(await second.text(), firstText);
    assert.equal(second.headers.get("idempotent-replayed"), "true");
    assert.equal((await debited()) - before, 2);
    const rows = await get().db.query<{ n: number }>(
      "SELECT count(*)::integer AS n FROM debits WHERE account_id = $1 AND call_key LIKE 'batch-idem:order-42@%'",
      [suite.accountId],
    );
    assert.equal(rows[0].n, 1);
    const other = await batch({ wallets: [W.full] }, { "Idempotency-Key": "order-42" });
    assert.equal(other.status, 409);
    assert.equal((await json(other)).code, "IDEMPOTENCY_KEY_REUSED");
  });
});
