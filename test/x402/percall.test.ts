// Paying per call over x402 (`upto`) through a real listening server and the local facilitator as a
// real HTTP server, paid by the unmodified official client (@x402/fetch with the exact and upto
// client schemes registered): a match moves its price, a miss nothing, a batch its matches, a
// reverse page its wallets; one payment runs one call; faults answer without the data.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { UptoEvmScheme } from "@x402/evm/upto/client";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import type { Db } from "../../src/db/types.ts";
import { startFacilitator, type Facilitator } from "../../scripts/facilitator.ts";
import { openCalls, recordCall } from "../../src/x402/percall.ts";
import { eachDatabase, slowStatement } from "../support/db.ts";
import { address, assertErrorBody, expectStatus, importIndex } from "../support/http.ts";
import { freePort } from "../support/ports.ts";
import { createClock, startServer, type TestServer } from "../support/server.ts";
import { faultyFacilitator, PAY_TO, USDC, type FaultyFacilitator } from "./support.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const PRICE = 83_334n;
const PUBLIC_URL = "https://walletid.example";

const MATCHED = address(1, "c1");
const ENS_ONLY = address(2, "c1");
const NEVER_SEEN = address(3, "c1");
const HANDLE = "sevenwallets";

interface Payer {
  address: string;
  pay: typeof fetch;
  /** Every PAYMENT-SIGNATURE the client sent. */
  signatures: string[];
}

/** A wallet funded at the faucet, paying through the unmodified @x402/fetch with exact and upto registered. */
async function newPayer(facilitator: Facilitator, atomic: bigint): Promise<Payer> {
  const account = privateKeyToAccount(generatePrivateKey());
  const res = await fetch(`${facilitator.url}/faucet`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ address: account.address, amount: atomic.toString() }),
  });
  assert.equal(res.status, 200);
  const signatures: string[] = [];
  const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const signature = req.headers.get("PAYMENT-SIGNATURE");
    if (signature) signatures.push(signature);
    return await fetch(req);
  }) as typeof fetch;
  // a reverse page's ceiling (100 wallets) is above the client's default cap of 1 dollar a payment
  const client = new x402Client()
    .register("eip155:8453", new UptoEvmScheme(account))
    .register("eip155:8453", new ExactEvmScheme(account))
    .setSpendControls({ maxAmountPerPayment: "$10" });
  return { address: account.address.toLowerCase(), pay: wrapFetchWithPayment(recording, client), signatures };
}

async function seed(db: Db): Promise<void> {
  const now = new Date();
  const observations: object[] = [
    { wallet: MATCHED, kind: "twitter", handle: "matched_one", route: "owner-signed-link", observed_at: now.toISOString() },
    { wallet: ENS_ONLY, kind: "ens", name: "ensonly.eth", route: "ens-reverse", observed_at: now.toISOString() },
    { wallet: address(11, "c2"), kind: "farcaster", fid: 901, username: "batchfc", route: "farcaster-verification", observed_at: now.toISOString() },
  ];
  for (let i = 0; i < 7; i++) observations.push({ wallet: address(i, "c3"), kind: "twitter", handle: HANDLE, route: "owner-signed-link", observed_at: now.toISOString() });
  await importIndex(db, observations, now);
}

type CallRow = { state: string; route: string; matches: number | null; amount: string | null; tx_hash: string | null };

/** A payer's paid calls, once their outcomes are recorded: the record goes out beside the answer, so it may land just after it. */
async function callsOf(db: Db, payer: string): Promise<CallRow[]> {
  const read = () => db.query<CallRow>("SELECT state, route, matches, amount::text AS amount, tx_hash FROM x402_calls WHERE payer = $1 ORDER BY claimed_at", [payer]);
  const until = Date.now() + 5_000;
  let rows = await read();
  while (rows.some((r) => r.state === "claimed") && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    rows = await read();
  }
  return rows;
}

const debitCount = async (db: Db) => Number((await db.query<{ n: number }>("SELECT count(*)::integer AS n FROM debits"))[0].n);

eachDatabase("x402 pay per call", (get) => {
  let facilitator: Facilitator;
  let server: TestServer;
  before(async () => {
    await seed(get().db);
    facilitator = await startFacilitator();
    server = await startServer(get().db, { clock: createClock(new Date()), env: { PUBLIC_URL, X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: PAY_TO } });
  });
  after(async () => {
    await server?.close();
    await facilitator?.close();
  });

  test("a keyless lookup answers 402 with an upto challenge for one match and the Bazaar extension; a key stays as today", async () => {
    const res = await expectStatus(await fetch(`${server.url}/api/v1/wallet/${MATCHED}`), 402);
    assertErrorBody(res, "PAYMENT_REQUIRED");
    const challenge = decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!);
    assert.equal(challenge.x402Version, 2);
    assert.equal(challenge.resource.url, `${PUBLIC_URL}/api/v1/wallet/${MATCHED}`);
    assert.equal((challenge.resource as { serviceName?: string }).serviceName, "walletid");
    assert.equal(challenge.accepts.length, 1);
    const [offer] = challenge.accepts;
    assert.deepEqual(
      { scheme: offer.scheme, network: offer.network, amount: offer.amount, asset: offer.asset, payTo: offer.payTo },
      { scheme: "upto", network: "eip155:8453", amount: PRICE.toString(), asset: USDC, payTo: PAY_TO },
    );
    assert.equal((offer.extra.facilitatorAddress as string).toLowerCase(), facilitator.token.relayer.toLowerCase());
    const bazaar = challenge.extensions?.bazaar as { info: { input: { method: string }; output: { example: unknown } }; schema: object } | undefined;
    assert.ok(bazaar, "the Bazaar discovery extension");
    assert.equal(bazaar.info.input.method, "GET");
    assert.ok(bazaar.info.output.example);

    const batch = await expectStatus(await fetch(`${server.url}/api/v1/batch`, { method: "POST", body: JSON.stringify({ wallets: [MATCHED, ENS_ONLY, NEVER_SEEN] }) }), 402);
    assert.equal(decodePaymentRequiredHeader(batch.headers.get("PAYMENT-REQUIRED")!).accepts[0].amount, (3n * PRICE).toString());
    const reverse = await expectStatus(await fetch(`${server.url}/api/v1/reverse/twitter/${HANDLE}`), 402);
    assert.equal(decodePaymentRequiredHeader(reverse.headers.get("PAYMENT-REQUIRED")!).accepts[0].amount, (100n * PRICE).toString());

    // an invalid key stays 401; a malformed address is 400 before any challenge
    assertErrorBody(await expectStatus(await fetch(`${server.url}/api/v1/wallet/${MATCHED}`, { headers: { Authorization: "Bearer wid_live_nope" } }), 401), "UNAUTHORIZED");
    assertErrorBody(await expectStatus(await fetch(`${server.url}/api/v1/wallet/0x123`), 400), "INVALID_ADDRESS");
  });

  test("the OpenAPI document gives each paid operation its 402 PAYMENT_REQUIRED and x-payment-info (price a match)", async () => {
    const doc = (await expectStatus(await fetch(`${server.url}/api/v1/openapi.json`), 200)).body;
    const paid = [
      ["/wallet/{address}", "get", 1],
      ["/batch", "post", 50],
      ["/reverse/twitter/{handle}", "get", 100],
    ] as const;
    for (const [path, method, maxMatches] of paid) {
      const op = doc.paths[path][method];
      assert.match(op.responses["402"].description, /PAYMENT_REQUIRED/, path);
      assert.ok(op.responses["402"].headers["PAYMENT-REQUIRED"], path);
      assert.equal(op["x-payment-info"].price.per_match, "0.083334", path);
      assert.equal(op["x-payment-info"].price.min, "0.000000", path);
      assert.equal(op["x-payment-info"].protocols[0].x402.scheme, "upto", path);
      assert.equal(op["x-payment-info"].protocols[0].x402.max_matches, maxMatches, path);
    }
    assert.equal(doc.paths["/reverse/farcaster/{username}"].get["x-payment-info"], undefined);
  });

  test("a matched lookup moves exactly the per-match price and answers PAYMENT-RESPONSE; no account is debited", async () => {
    const payer = await newPayer(facilitator, 1_000_000n);
    const before = facilitator.token.balanceOf(PAY_TO);
    const res = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${MATCHED}`), 200);
    assert.equal(res.body.meta.found, true);
    assert.equal(res.body.data.twitter.handle, "matched_one");
    const settled = decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!);
    assert.equal(settled.success, true);
    assert.equal(settled.amount, PRICE.toString());
    assert.equal(facilitator.token.balanceOf(payer.address), 1_000_000n - PRICE);
    assert.equal(facilitator.token.balanceOf(PAY_TO) - before, PRICE);
    const [row] = await callsOf(get().db, payer.address);
    assert.deepEqual({ ...row }, { state: "settled", route: "/v1/wallet/{address}", matches: 1, amount: PRICE.toString(), tx_hash: settled.transaction });
    assert.equal(await debitCount(get().db), 0, "nothing written to any account's debits");
    assert.ok(res.headers.get("X-RateLimit-Limit"), "the paying wallet's windows are shown");
    // where the paid call's time went: the facilitator's round trips, and the service's own beside them
    const timing = /^facilitator;dur=(\d+\.\d\d), service;dur=(\d+\.\d\d)$/.exec(res.headers.get("Server-Timing") ?? "");
    assert.ok(timing, `Server-Timing: ${res.headers.get("Server-Timing")}`);
    assert.ok(Number(timing[1]) > 0, "verification and settlement are round trips to the facilitator");
  });

  test("an ens-only and a never-seen wallet move nothing and carry no PAYMENT-RESPONSE", async () => {
    const payer = await newPayer(facilitator, 1_000_000n);
    const ens = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${ENS_ONLY}`), 200);
    assert.equal(ens.body.data.ens_name, "ensonly.eth");
    assert.equal(ens.headers.get("PAYMENT-RESPONSE"), null);
    const never = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${NEVER_SEEN}`), 200);
    assert.deepEqual(never.body, { data: null, meta: { wallet: NEVER_SEEN, found: false, checked_at: null } });
    assert.equal(never.headers.get("PAYMENT-RESPONSE"), null);
    assert.equal(facilitator.token.balanceOf(payer.address), 1_000_000n);
    assert.deepEqual((await callsOf(get().db, payer.address)).map((r) => [r.state, r.matches, r.amount]), [["free", 0, "0"], ["free", 0, "0"]]);
  });

  test("a batch of 6 with 2 matches moves 2 prices", async () => {
    const payer = await newPayer(facilitator, 1_000_000n);
    const wallets = [MATCHED, ENS_ONLY, NEVER_SEEN, address(11, "c2"), address(12, "c2"), address(13, "c2")];
    const res = await expectStatus(await payer.pay(`${server.url}/api/v1/batch`, { method: "POST", body: JSON.stringify({ wallets }) }), 200);
    assert.equal(res.body.meta.matched, 2);
    assert.equal(res.body.data.length, 6);
    assert.equal(decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!).amount, (2n * PRICE).toString());
    assert.equal(facilitator.token.balanceOf(payer.address), 1_000_000n - 2n * PRICE);
  });

  test("a reverse page of 7 wallets moves 7 prices; reverse farcaster needs an account", async () => {
    const payer = await newPayer(facilitator, 10_000_000n);
    const res = await expectStatus(await payer.pay(`${server.url}/api/v1/reverse/twitter/${HANDLE}`), 200);
    assert.equal(res.body.data.length, 7);
    assert.equal(facilitator.token.balanceOf(payer.address), 10_000_000n - 7n * PRICE);
    const [row] = await callsOf(get().db, payer.address);
    assert.deepEqual([row.state, row.matches], ["settled", 7]);
    assertErrorBody(await expectStatus(await fetch(`${server.url}/api/v1/reverse/farcaster/batchfc`), 403), "ACCOUNT_REQUIRED");
  });

  test("the same payment twice, and 20 times at once, moves money once; 20 payments at once from one wallet move 20 prices", async () => {
    const payer = await newPayer(facilitator, 5_000_000n);
    await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${MATCHED}`), 200);
    const used = payer.signatures.at(-1)!;
    const again = await expectStatus(await fetch(`${server.url}/api/v1/wallet/${MATCHED}`, { headers: { "PAYMENT-SIGNATURE": used } }), 402);
    assert.equal(again.body.data, undefined, "nothing returned");
    assert.equal(facilitator.token.balanceOf(payer.address), 5_000_000n - PRICE);

    // one fresh payment sent 20 times at once: one answer, one settlement
    const challenge = await fetch(`${server.url}/api/v1/wallet/${MATCHED}`);
    assert.equal(challenge.status, 402);
    const before = payer.signatures.length;
    await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${NEVER_SEEN}`), 200); // signs one payment for one match
    const fresh = payer.signatures[before];
    // a miss left that payment unused on chain but claimed: it runs no other call
    const replays = await Promise.all(Array.from({ length: 20 }, () => fetch(`${server.url}/api/v1/wallet/${MATCHED}`, { headers: { "PAYMENT-SIGNATURE": fresh } })));
    assert.deepEqual([...new Set(replays.map((r) => r.status))], [402]);
    assert.equal(facilitator.token.balanceOf(payer.address), 5_000_000n - PRICE);

    const concurrent = await newPayer(facilitator, 5_000_000n);
    const answers = await Promise.all(Array.from({ length: 20 }, () => concurrent.pay(`${server.url}/api/v1/wallet/${MATCHED}`)));
    assert.deepEqual([...new Set(answers.map((r) => r.status))], [200]);
    assert.equal(new Set(concurrent.signatures).size, 20);
    assert.equal(facilitator.token.balanceOf(concurrent.address), 5_000_000n - 20n * PRICE);
    const rows = await callsOf(get().db, concurrent.address);
    assert.equal(rows.filter((r) => r.state === "settled").length, 20);
  });

  test("a payment replayed 20 times at once before it ran: exactly one answer, money moved once", async () => {
    const payer = await newPayer(facilitator, 5_000_000n);
    // capture a signed payment without letting it reach the server: the client pays a 402 the capture answers
    let captured: string | undefined;
    const capture = (async (input: RequestInfo | URL, init?: RequestInit) => {
      const req = new Request(input, init);
      const signature = req.headers.get("PAYMENT-SIGNATURE");
      if (signature) {
        captured = signature;
        return new Response("{}", { status: 500 });
      }
      return await fetch(req);
    }) as typeof fetch;
    const account = privateKeyToAccount(generatePrivateKey());
    await fetch(`${facilitator.url}/faucet`, { method: "POST", body: JSON.stringify({ address: account.address, amount: "5000000" }), headers: { "Content-Type": "application/json" } });
    const client = new x402Client().register("eip155:8453", new UptoEvmScheme(account)).register("eip155:8453", new ExactEvmScheme(account));
    await wrapFetchWithPayment(capture, client)(`${server.url}/api/v1/wallet/${MATCHED}`);
    assert.ok(captured);
    const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`${server.url}/api/v1/wallet/${MATCHED}`, { headers: { "PAYMENT-SIGNATURE": captured! } })));
    const statuses = answers.map((r) => r.status).sort();
    assert.equal(statuses.filter((s) => s === 200).length, 1, `statuses ${statuses}`);
    assert.deepEqual([...new Set(statuses.filter((s) => s !== 200))], [402]);
    assert.equal(facilitator.token.balanceOf(account.address), 5_000_000n - PRICE);
    assert.equal(payer.signatures.length, 0);
  });

  test("too little balance for the ceiling is 402 with nothing returned and nothing moved", async () => {
    const payer = await newPayer(facilitator, PRICE - 1n);
    const res = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${MATCHED}`), 402);
    assertErrorBody(res, "PAYMENT_REQUIRED");
    assert.ok(decodePaymentRequiredHeader(res.headers.get("PAYMENT-REQUIRED")!).error);
    assert.equal(facilitator.token.balanceOf(payer.address), PRICE - 1n);
    assert.equal((await callsOf(get().db, payer.address)).length, 0, "nothing claimed");

    // the refused payment's claim, made beside its verification, was given back with its rate unit:
    // funded now, the same payment runs its call, and the wallet's window counts that call alone
    await fetch(`${facilitator.url}/faucet`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ address: payer.address, amount: "1" }),
    });
    const again = await expectStatus(await fetch(`${server.url}/api/v1/wallet/${MATCHED}`, { headers: { "PAYMENT-SIGNATURE": payer.signatures.at(-1)! } }), 200);
    assert.equal(again.body.data.twitter.handle, "matched_one");
    assert.equal(facilitator.token.balanceOf(payer.address), 0n);
    assert.equal(Number(again.headers.get("X-RateLimit-Remaining")), Number(again.headers.get("X-RateLimit-Limit")) - 1);
    assert.deepEqual((await callsOf(get().db, payer.address)).map((r) => r.state), ["settled"]);
  });
});

function admin(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { DATABASE_URL: _d, DATA_DIR: _e, ...base } = process.env;
  const child = spawn(process.execPath, ["--import", "tsx", "scripts/admin.ts", ...args], { cwd: REPO, env: { ...base, ...env } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

eachDatabase("x402 pay per call: faults", (get) => {
  let facilitator: Facilitator;
  let proxy: FaultyFacilitator;
  let server: TestServer;
  let downServer: TestServer;
  before(async () => {
    await seed(get().db);
    facilitator = await startFacilitator();
    proxy = await faultyFacilitator(facilitator.url);
    const clock = createClock(new Date());
    server = await startServer(get().db, { clock, env: { X402_FACILITATOR_URL: proxy.url, X402_PAY_TO: PAY_TO, UPSTREAM_TIMEOUT_MS: "1000" } });
    downServer = await startServer(get().db, { clock, env: { X402_FACILITATOR_URL: `http://127.0.0.1:${await freePort()}`, X402_PAY_TO: PAY_TO } });
  });
  after(async () => {
    await server?.close();
    await downServer?.close();
    await proxy?.close();
    await facilitator?.close();
  });

  test("facilitator down: 503 with Retry-After, nothing claimed", async () => {
    const res = await expectStatus(await fetch(`${downServer.url}/api/v1/wallet/${MATCHED}`), 503);
    assertErrorBody(res, "SERVICE_UNAVAILABLE");
    assert.ok(Number(res.headers.get("Retry-After")) > 0);
  });

  test("settlement refused: 402 with a fresh challenge and no data, nothing moved", async () => {
    const payer = await newPayer(facilitator, 1_000_000n);
    proxy.mode = "settle-false";
    try {
      const res = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${MATCHED}`), 402);
      assertErrorBody(res, "PAYMENT_REQUIRED");
      assert.ok(res.headers.get("PAYMENT-REQUIRED"));
      assert.equal(decodePaymentResponseHeader(res.headers.get("PAYMENT-RESPONSE")!).success, false);
    } finally {
      proxy.mode = "pass";
    }
    assert.equal(facilitator.token.balanceOf(payer.address), 1_000_000n);
    assert.deepEqual((await callsOf(get().db, payer.address)).map((r) => r.state), ["failed"]);
  });

  test("a graceful stop right after a paid answer waits for the answer's outcome record: no row is left claimed", async () => {
    // the outcome record is slow here (300 ms), so a close that did not wait would return first
    const db = get().db;
    const slowRecords = slowStatement(db, "x402_calls_record_outcome", 300);
    const stopping = await startServer(slowRecords, { clock: createClock(new Date()), env: { X402_FACILITATOR_URL: facilitator.url, X402_PAY_TO: PAY_TO } });
    const payer = await newPayer(facilitator, 1_000_000n);
    const res = await expectStatus(await payer.pay(`${stopping.url}/api/v1/wallet/${MATCHED}`), 200);
    assert.equal(res.body.data.wallet, MATCHED);
    await stopping.close();
    const rows = await db.query<{ state: string }>("SELECT state FROM x402_calls WHERE payer = $1", [payer.address]);
    assert.deepEqual(rows.map((r) => r.state), ["settled"]);
  });

  describe("settle timeout", () => {
    test("503 with Retry-After and no data, recorded unknown, and reconciled once by admin x402 call", async () => {
      const payer = await newPayer(facilitator, 1_000_000n);
      proxy.mode = "slow-settle";
      proxy.delayMs = 1500;
      let res;
      try {
        res = await expectStatus(await payer.pay(`${server.url}/api/v1/wallet/${MATCHED}`), 503);
      } finally {
        proxy.mode = "pass";
      }
      assertErrorBody(res, "SERVICE_UNAVAILABLE");
      assert.ok(Number(res.headers.get("Retry-After")) > 0);
      const [row] = await get().db.query<{ id: string; state: string; matches: number; amount: string }>(
        "SELECT id, state, matches, amount::text AS amount FROM x402_calls WHERE payer = $1",
        [payer.address],
      );
      assert.deepEqual([row.state, row.matches, row.amount], ["unknown", 1, PRICE.toString()]);
      // the slow settlement landed on chain meanwhile
      await new Promise((r) => setTimeout(r, 800));
      const [transfer] = facilitator.token.transfers.filter((t) => t.from === payer.address);
      assert.equal(transfer.value, PRICE);

      const url = get().url;
      if (!url) {
        // an embedded database is open in this process, so the CLI cannot open it: what it runs
        assert.ok((await openCalls(get().db, new Date())).some((c) => c.id === row.id));
        const done = await recordCall(get().db, { id: row.id, state: "settled", txHash: transfer.hash, now: new Date() });
        assert.deepEqual([done?.state, done?.matches, done?.amount, done?.tx_hash], ["settled", 1, PRICE.toString(), transfer.hash]);
        assert.equal(await recordCall(get().db, { id: row.id, state: "failed", now: new Date() }), undefined, "once");
        return;
      }
      const listed = await admin(["x402", "calls"], { DATABASE_URL: url });
      assert.equal(listed.code, 0, listed.stderr);
      assert.ok(JSON.parse(listed.stdout).open.some((c: { id: string }) => c.id === row.id));
      const reconciled = await admin(["x402", "call", row.id, "settled", "--tx", transfer.hash], { DATABASE_URL: url });
      assert.equal(reconciled.code, 0, reconciled.stderr);
      assert.deepEqual(
        (({ state, matches, amount, tx_hash }) => ({ state, matches, amount, tx_hash }))(JSON.parse(reconciled.stdout)),
        { state: "settled", matches: 1, amount: PRICE.toString(), tx_hash: transfer.hash },
      );
      const twice = await admin(["x402", "call", row.id, "failed"], { DATABASE_URL: url });
      assert.equal(twice.code, 1);
      assert.match(twice.stderr, /already recorded/);
    });
  });
});
