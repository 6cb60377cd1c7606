// Opt-out by wallet signature: the challenge (parsed back by viem), every refusal of the CONTRACT,
// and what follows an opt-out on every surface for another account's key (never seen, never
// billed, reverse counts dropped, a running job, a re-import, /stats), restore, the plan of the
// identity read, contract wallets through a fake JSON-RPC, and the operator's commands.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { parseSiweMessage } from "viem/siwe";
import { sql } from "../src/db/queries.ts";
import { jobRunDeps } from "../src/jobs/deps.ts";
import { runJob } from "../src/jobs/run.ts";
import { claimJob } from "../src/jobs/worker.ts";
import { listOptOuts, recordOperatorRequest } from "../src/index/opt-out.ts";
import { materializeStats } from "../src/maintenance/stats.ts";
import { eachDatabase } from "./support/db.ts";
import { loadFixtures, W } from "./support/fixtures.ts";
import { address, assertErrorBody, debitedTotal, expectStatus, importIndex } from "./support/http.ts";
import { connect } from "./mcp/support.ts";
import { createClock, createCustomer, startServer, type TestServer } from "./support/server.ts";

const START = "2026-11-20T12:00:30Z";

function post(server: TestServer, path: string, body: unknown, headers: Record<string, string> = {}) {
  return server.request(path, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
}

async function challenge(server: TestServer, wallet: string, action?: string, headers: Record<string, string> = {}) {
  return (await expectStatus(await post(server, "/api/opt-out/challenge", { wallet, ...(action ? { action } : {}) }, headers), 200, "challenge")).body as {
    message: string;
    expires_at: string;
  };
}

/** The whole signed flow for `owner`: challenge, personal_sign, send. */
async function signed(server: TestServer, owner: PrivateKeyAccount, action?: "remove" | "restore") {
  const { message } = await challenge(server, owner.address, action);
  const signature = await owner.signMessage({ message });
  return await post(server, "/api/opt-out", { message, signature });
}

/** An owner's wallet with a twitter handle shared with a neighbour and an attested farcaster account. */
async function importOwner(db: Parameters<typeof importIndex>[0], wallet: string, handle: string, fid: number, now: Date) {
  const at = new Date(now.getTime() - 86_400_000).toISOString();
  await importIndex(
    db,
    [
      { wallet, kind: "twitter", route: "x-signin", handle, observed_at: at },
      { wallet, kind: "farcaster", route: "farcaster-verification", fid, username: handle, followers: 50, observed_at: at },
      { wallet: address(fid, "d"), kind: "twitter", route: "x-signin", handle, observed_at: at },
    ],
    now,
  );
}

eachDatabase("Opt-out by wallet signature", (get) => {
  const clock = createClock(START);
  let server: TestServer;
  let key: string;
  let accountId: string;
  const owner = privateKeyToAccount(generatePrivateKey());
  const wallet = owner.address.toLowerCase();
  const neighbour = address(901, "d");

  before(async () => {
    const { db } = get();
    await loadFixtures(db, clock.now());
    await importOwner(db, wallet, "optme", 901, clock.now());
    ({ apiKey: key, accountId } = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 5 }], now: clock.now() }));
    server = await startServer(db, { clock, env: { WORKER: "0" } });
  });
  after(() => server.close());

  test("the challenge is an EIP-4361 message viem parses back: this site, chain 1, a single-use nonce, ten minutes, a statement", async () => {
    const res = await expectStatus(await post(server, "/api/opt-out/challenge", { wallet: owner.address }), 200);
    assert.equal(res.headers.get("cache-control"), "no-store");
    const parsed = parseSiweMessage(res.body.message);
    assert.equal(parsed.domain, "localhost:8787");
    assert.equal(parsed.uri, "http://localhost:8787/opt-out");
    assert.equal(parsed.address, owner.address, "the wallet, checksummed");
    assert.equal(parsed.chainId, 1);
    assert.equal(parsed.version, "1");
    assert.match(parsed.nonce!, /^[a-zA-Z0-9]{16,}$/);
    assert.equal(parsed.issuedAt!.toISOString(), clock.now().toISOString());
    assert.equal(parsed.expirationTime!.getTime() - parsed.issuedAt!.getTime(), 10 * 60_000);
    assert.equal(res.body.expires_at, parsed.expirationTime!.toISOString());
    assert.match(parsed.statement!, /^Remove this wallet from walletid.*never seen/);
    const again = parseSiweMessage((await challenge(server, owner.address, "restore")).message);
    assert.notEqual(again.nonce, parsed.nonce, "a fresh nonce each time");
    assert.match(again.statement!, /^Restore this wallet/);
  });

  test("refusals: malformed wallet, unknown or altered message, wrong signer, expired, replay", async () => {
    assertErrorBody(await expectStatus(await post(server, "/api/opt-out/challenge", { wallet: "0x1234" }), 400), "INVALID_ADDRESS");
    assertErrorBody(await expectStatus(await post(server, "/api/opt-out/challenge", { wallet, action: "erase" }), 400), "INVALID_REQUEST");
    assertErrorBody(await expectStatus(await post(server, "/api/opt-out", { message: 1 }), 400), "INVALID_REQUEST");

    const { message } = await challenge(server, owner.address);
    const signature = await owner.signMessage({ message });
    const send = (m: string, s: string) => post(server, "/api/opt-out", { message: m, signature: s });

    const malformed = message.replace(owner.address, "0x12345");
    assertErrorBody(await expectStatus(await send(malformed, signature), 400, "malformed wallet in the message"), "INVALID_ADDRESS");
    const altered = message.replace("Remove this wallet", "Restore this wallet");
    assertErrorBody(await expectStatus(await send(altered, await owner.signMessage({ message: altered })), 400, "altered"), "INVALID_CHALLENGE");
    const unknown = message.replace(/Nonce: \w+/, "Nonce: 0123456789abcdef0123456789abcdef");
    assertErrorBody(await expectStatus(await send(unknown, await owner.signMessage({ message: unknown })), 400, "unknown nonce"), "INVALID_CHALLENGE");
    const stranger = privateKeyToAccount(generatePrivateKey());
    assertErrorBody(await expectStatus(await send(message, await stranger.signMessage({ message })), 401, "wrong signer"), "INVALID_SIGNATURE");
    assertErrorBody(await expectStatus(await send(message, "0xnothex"), 401, "not a signature"), "INVALID_SIGNATURE");

    clock.advance(10 * 60_000 + 1);
    assertErrorBody(await expectStatus(await send(message, signature), 400, "expired"), "INVALID_CHALLENGE");
    const { db } = get();
    assert.equal((await db.query("SELECT 1 FROM opt_outs")).length, 0, "nothing was applied");

    const fresh = await challenge(server, owner.address);
    const freshSignature = await owner.signMessage({ message: fresh.message });
    // the restore of a wallet that is not out changes nothing but is recorded; this one removes
    const ok = await expectStatus(await send(fresh.message, freshSignature), 200);
    assert.deepEqual(ok.body, { wallet, opted_out: true, effective_at: clock.now().toISOString() });
    assertErrorBody(await expectStatus(await send(fresh.message, freshSignature), 400, "replay"), "INVALID_CHALLENGE");
    const [proof] = await db.query<{ message: string; signature: string; via: string; created_at: Date }>(
      "SELECT r.message, r.signature, r.via, r.created_at FROM opt_outs o JOIN opt_out_requests r ON r.id = o.request_id WHERE o.wallet = $1",
      [wallet],
    );
    assert.deepEqual({ ...proof }, { message: fresh.message, signature: freshSignature, via: "signature", created_at: clock.now() }, "the proof is kept");
  });

  test("opted out: every surface answers never seen for another account's key, and nothing is billed", async () => {
    const { db } = get();
    clock.advance(60_000);
    const billed = await debitedTotal(db, accountId);

    const single = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key }), 200);
    assert.deepEqual(single.body, { data: null, meta: { wallet, found: false, checked_at: null } });

    const batch = await expectStatus(await post(server, "/api/v1/batch", { wallets: [wallet, W.ensOnly] }, { Authorization: `Bearer ${key}` }), 200);
    assert.equal(batch.body.data[0], null);
    assert.equal(batch.body.data[1].wallet, W.ensOnly);
    assert.equal(batch.body.meta.matched, 0);

    const reverse = await expectStatus(await server.request("/api/v1/reverse/twitter/optme", { key }), 200);
    assert.deepEqual(reverse.body.data.map((r: { wallet: string }) => r.wallet), [neighbour], "only the neighbour holds the handle now");
    assert.equal(reverse.body.meta.total_count, 1, "the count dropped");
    const farcaster = await db.query<{ n: number }>("SELECT n FROM reverse_counts WHERE kind = 'farcaster' AND key = 'optme'");
    assert.equal(farcaster[0]?.n ?? 0, 0);

    const estimateList = [wallet, ...Array.from({ length: 9 }, (_, i) => address(i + 1, "e0"))];
    const estimate = await expectStatus(await post(server, "/api/v1/estimate", { wallets: estimateList }, { Authorization: `Bearer ${key}` }), 200);
    assert.equal(estimate.body.data.in_index, 0);
    assert.equal(estimate.body.data.never_checked, 10);
    assert.equal(estimate.body.data.would_bill_estimate.low, 0);

    const mcp = await connect("v1", server.url, key);
    try {
      const out = await mcp.callTool("walletid_resolve_wallets", { wallets: [wallet] });
      assert.ok(!out.isError, JSON.stringify(out));
      assert.equal(out.structuredContent.billed_matches, 0);
      const [record] = out.structuredContent.records;
      assert.equal(record.found, false);
      assert.equal(record.checked_at ?? null, null);
    } finally {
      await mcp.close();
    }

    // the reverse page showed the neighbour, whose twitter bills one; the opted-out wallet bills nothing anywhere
    assert.equal(await debitedTotal(db, accountId), billed + 1, "only the neighbour on the reverse page is billed");
    const stats = await materializeStats(db, { now: clock.now() });
    assert.equal(stats.counts.twitter, (await db.query<{ n: number }>("SELECT count(DISTINCT wallet)::integer AS n FROM links WHERE kind = 'twitter'"))[0].n - 1);
  });

  test("a re-import keeps the observations but does not show them", async () => {
    const { db } = get();
    await importIndex(db, [{ wallet, kind: "ens", route: "ens-primary", name: "optme.eth" }], clock.now());
    assert.equal((await db.query("SELECT 1 FROM links WHERE wallet = $1", [wallet])).length, 3, "stored");
    const single = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key }), 200);
    assert.equal(single.body.data, null);
    const reverse = await expectStatus(await server.request("/api/v1/reverse/twitter/optme", { key }), 200);
    assert.equal(reverse.body.meta.total_count, 1);
  });

  test("the identity read probes the suppression list once a wallet, by its primary key", async () => {
    const { db } = get();
    const asked = [wallet, W.full, W.ensOnly, W.neverSeen];
    const rows = await db.query<Record<string, string>>(
      "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM identity_rows($1::text[])",
      [asked],
    );
    const plan = rows.map((r) => Object.values(r)[0]).join("\n");
    const probes = [...plan.matchAll(/Index Only Scan using opt_outs_pkey on opt_outs o \(actual rows=[\d.]+ loops=(\d+)\)/g)];
    assert.equal(probes.length, 1, plan);
    assert.equal(Number(probes[0][1]), 3, `one probe per wallet the index holds (three of the four): ${plan}`);
    assert.doesNotMatch(plan, /Seq Scan on opt_outs/, plan);
  });

  test("restore shows everything again", async () => {
    const res = await expectStatus(await signed(server, owner, "restore"), 200);
    assert.deepEqual(res.body, { wallet, opted_out: false, effective_at: clock.now().toISOString() });
    const single = await expectStatus(await server.request(`/api/v1/wallet/${wallet}`, { key }), 200);
    assert.equal(single.body.meta.found, true);
    assert.equal(single.body.data.ens_name, "optme.eth", "the observation imported while out");
    const reverse = await expectStatus(await server.request("/api/v1/reverse/twitter/optme", { key }), 200);
    assert.equal(reverse.body.meta.total_count, 2);
    assert.equal((await get().db.query("SELECT 1 FROM opt_outs")).length, 0);
  });

  test("a job running across the opt-out hides the wallet in results written afterwards and does not bill it", async () => {
    const { db } = get();
    const runner = privateKeyToAccount(generatePrivateKey());
    const out = runner.address.toLowerCase();
    await importOwner(db, out, "jobbed", 902, clock.now());
    const customer = await createCustomer(db, { packs: [{ pack: "Agent", quantity: 5 }], now: clock.now() });
    // 5 a chunk: the wallet in the first chunk, W.farcasterOnly (billed) in the third
    const wallets = [out, ...Array.from({ length: 9 }, (_, i) => address(i + 1, "e1")), W.farcasterOnly, address(20, "e1")];
    const jobServer = await startServer(db, { clock, env: { WORKER: "0", JOB_CHUNK_SIZE: "5" } });
    try {
      const submitted = await expectStatus(await post(jobServer, "/api/v1/jobs", { wallets }, { Authorization: `Bearer ${customer.apiKey}` }), 202);
      const jobId = submitted.body.data.job_id;
      const deps = jobRunDeps(jobServer.config, { db, now: clock.now, log: () => {} });
      const job = await claimJob(deps, "test-worker");
      assert.equal(job?.id, jobId);
      let asked = 0;
      assert.equal(await runJob(deps, job!, { shouldStop: () => ++asked > 1 }), "stopped", "the first chunk is written, then the job stops");
      // the wallet's chunk is written and counted; now its owner opts out
      assert.equal((await expectStatus(await signed(server, runner), 200)).body.opted_out, true);
      const [row] = await db.query<{ processed: number }>("SELECT processed FROM jobs WHERE id = $1", [jobId]);
      assert.equal(row.processed, 5);
      assert.equal(await runJob(deps, { ...job!, processed: 5 }), "completed");
      const done = await expectStatus(await jobServer.request(`/api/v1/jobs/${jobId}`, { key: customer.apiKey }), 200);
      assert.equal(done.body.data.status, "completed");
      assert.equal(done.body.meta.matched, 1, "only W.farcasterOnly is billed");
      assert.equal(done.body.meta.found, 1);
      assert.equal(done.body.data.wallets[0], out);
      assert.equal(done.body.data.results[0], null, "the opted-out wallet's result is null, as a wallet never seen");
      assert.equal(done.body.data.results[10]?.wallet, W.farcasterOnly);
      assert.equal(await debitedTotal(db, customer.accountId), 1);
    } finally {
      await jobServer.close();
    }
  });

  test("operators: a request by another channel is recorded with its reason, and listed", async () => {
    const { db } = get();
    await recordOperatorRequest(db, { wallet: W.full, action: "remove", reason: "email from the owner, keys lost", now: clock.now() });
    const single = await expectStatus(await server.request(`/api/v1/wallet/${W.full}`, { key }), 200);
    assert.equal(single.body.data, null);
    const listed = await listOptOuts(db);
    assert.ok(listed.some((o) => o.wallet === W.full && o.via === "operator" && o.reason === "email from the owner, keys lost"), JSON.stringify(listed));
    await recordOperatorRequest(db, { wallet: W.full, action: "restore", reason: "asked back", now: clock.now() });
    assert.equal((await expectStatus(await server.request(`/api/v1/wallet/${W.full}`, { key }), 200)).body.meta.found, true);
  });

  test("limited per client address: past 30 requests an hour, 429 with Retry-After", async () => {
    clock.advance(3_600_000);
    for (let i = 0; i < 30; i++) await challenge(server, owner.address);
    const refused = await expectStatus(await post(server, "/api/opt-out/challenge", { wallet }), 429);
    assertErrorBody(refused, "RATE_LIMITED");
    assert.ok(Number(refused.headers.get("retry-after")) > 0);
  });
});

/** A JSON-RPC endpoint whose contract wallet accepts one signature: the ERC-6492 validator call answers true, a direct ERC-1271 call the magic value. */
async function contractWalletRpc(wallet: string, accepted: string) {
  const state = { url: "", calls: 0, close: async () => {} };
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const request = JSON.parse(body) as { id: number; method: string; params: Array<{ to?: string; data?: string }> };
    let result: string | undefined;
    if (request.method === "eth_call") {
      state.calls++;
      const data = (request.params[0]?.data ?? "").toLowerCase();
      const valid = data.includes(wallet.slice(2).toLowerCase()) || request.params[0]?.to?.toLowerCase() === wallet.toLowerCase();
      const signed = valid && data.includes(accepted.slice(2).toLowerCase());
      // isValidSignature(bytes32,bytes) answers its selector (0x1626ba7e) when the signature is the wallet's
      if (data.startsWith("0x1626ba7e")) result = signed ? `0x1626ba7e${"0".repeat(56)}` : `0xffffffff${"0".repeat(56)}`;
      else result = `0x${"0".repeat(63)}${signed ? "1" : "0"}`;
    } else if (request.method === "eth_chainId") result = "0x1";
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(result === undefined ? { jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "method not found" } } : { jsonrpc: "2.0", id: request.id, result }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

eachDatabase("Opt-out of a contract wallet (ERC-1271 through ETH_RPC_URL)", (get) => {
  const contract = `0x${"c0".repeat(20)}`;
  const accepted = `0x${"ab".repeat(97)}`;
  let rpc: Awaited<ReturnType<typeof contractWalletRpc>>;
  let server: TestServer;
  let plain: TestServer;

  before(async () => {
    rpc = await contractWalletRpc(contract, accepted);
    server = await startServer(get().db, { clock: createClock(START), env: { ETH_RPC_URL: rpc.url } });
    plain = await startServer(get().db, { clock: createClock(START) });
  });
  after(async () => {
    await server.close();
    await plain.close();
    await rpc.close();
  });

  test("the chain's answer decides: the accepted signature opts out, another is 401; without ETH_RPC_URL 401", async () => {
    const attempt = async (target: TestServer, signature: string) => {
      const { message } = await challenge(target, contract);
      return await post(target, "/api/opt-out", { message, signature });
    };
    assertErrorBody(await expectStatus(await attempt(server, `0x${"cd".repeat(97)}`), 401, "refused by the wallet"), "INVALID_SIGNATURE");
    assertErrorBody(await expectStatus(await attempt(plain, accepted), 401, "no RPC: ordinary accounts only"), "INVALID_SIGNATURE");
    assert.equal((await get().db.query("SELECT 1 FROM opt_outs")).length, 0);
    const ok = await expectStatus(await attempt(server, accepted), 200, "the wallet's signature");
    assert.equal(ok.body.wallet, contract);
    assert.equal(ok.body.opted_out, true);
    assert.ok(rpc.calls >= 2, "asked the chain both times");
  });

  test("an RPC that does not answer is 503 with Retry-After, nothing applied", async () => {
    const down = await startServer(get().db, { clock: createClock(START), env: { ETH_RPC_URL: "http://127.0.0.1:9", UPSTREAM_TIMEOUT_MS: "1000" } });
    try {
      const { message } = await challenge(down, contract, "restore");
      const res = await expectStatus(await post(down, "/api/opt-out", { message, signature: accepted }), 503);
      assertErrorBody(res, "SERVICE_UNAVAILABLE");
      assert.equal(res.headers.get("retry-after"), "5");
      assert.equal((await get().db.query("SELECT 1 FROM opt_outs")).length, 1, "still out");
    } finally {
      await down.close();
    }
  });
});
