// Key recovery by wallet signature (GET/POST /api/x402/recover) and the loyalty packs, through a
// real server and the local facilitator, paid by the official client.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, test } from "node:test";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { createAccount } from "../../src/ledger/accounts.ts";
import { eachDatabase } from "../support/db.ts";
import { createClock, startServer, type TestServer } from "../support/server.ts";
import { assertErrorBody, expectStatus } from "../support/http.ts";
import { buyInit, ledgerSnapshot, newBuyer, purchaseSuite, type Buyer } from "./support.ts";

eachDatabase("x402 key recovery", (get) => {
  const s = purchaseSuite(get);
  let buyer: Buyer;
  let firstKey: string;

  async function challengeFor(wallet: string) {
    return (await expectStatus(await fetch(`${s.server.url}/api/x402/recover?wallet=${wallet}`), 200, "challenge")).body as { message: string; issued_at: string; token: string };
  }

  async function recover(body: Record<string, unknown>) {
    return await fetch(`${s.server.url}/api/x402/recover`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  }

  /** A fresh challenge for `signer`'s wallet (or `wallet`), signed by `signer`. */
  async function signed(signer: PrivateKeyAccount, extra: Record<string, unknown> = {}, wallet = signer.address) {
    // the server's clock is frozen: challenges issued at the same millisecond are one challenge
    s.server.clock.advance(1);
    const c = await challengeFor(wallet);
    return { wallet, issued_at: c.issued_at, token: c.token, signature: await signer.signMessage({ message: c.message }), ...extra };
  }

  async function activeKeys(): Promise<number> {
    const rows = await get().db.query("SELECT k.id FROM api_keys k JOIN x402_wallets w ON w.account_id = k.account_id WHERE w.wallet = $1 AND k.revoked_at IS NULL", [buyer.address]);
    return rows.length;
  }

  test("GET answers the same shape for every well-formed address and 400 for a malformed one", async () => {
    buyer = await newBuyer(s.facilitator, 50);
    firstKey = (await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1)), 200, "purchase")).body.api_key;
    const stranger = privateKeyToAccount(generatePrivateKey()).address;
    const paid = await challengeFor(buyer.account.address);
    const never = await challengeFor(stranger);
    assert.deepEqual(Object.keys(paid).sort(), ["issued_at", "message", "token"]);
    assert.deepEqual(Object.keys(never).sort(), ["issued_at", "message", "token"]);
    assert.equal(never.message.replace(stranger.toLowerCase(), "W"), paid.message.replace(buyer.address, "W"), "nothing reveals whether the wallet paid");
    for (const wallet of ["0x123", "", "not-an-address"]) {
      assertErrorBody(await expectStatus(await fetch(`${s.server.url}/api/x402/recover?wallet=${wallet}`), 400, wallet), "INVALID_ADDRESS");
    }
    assertErrorBody(await expectStatus(await fetch(`${s.server.url}/api/x402/recover`), 400), "INVALID_ADDRESS");
  });

  test("expired, altered and reused challenges, another wallet's signature, a wallet that never paid: refused, no key", async () => {
    const before = await ledgerSnapshot(get().db);
    const good = await signed(buyer.account);

    const refusals: Array<[Record<string, unknown>, number, string, string]> = [
      [{ ...good, token: good.token.slice(0, -2) + (good.token.endsWith("AA") ? "BB" : "AA") }, 400, "INVALID_CHALLENGE", "altered token"],
      [{ ...good, issued_at: new Date(Date.parse(good.issued_at) + 1000).toISOString() }, 400, "INVALID_CHALLENGE", "altered issued_at"],
      [{ ...good, wallet: privateKeyToAccount(generatePrivateKey()).address }, 400, "INVALID_CHALLENGE", "another wallet named"],
      [{ ...good, signature: await privateKeyToAccount(generatePrivateKey()).signMessage({ message: (await challengeFor(buyer.account.address)).message }) }, 401, "INVALID_SIGNATURE", "signed by another wallet"],
      [{ ...good, signature: "0x1234" }, 401, "INVALID_SIGNATURE", "a malformed signature"],
      [{ ...good, wallet: "0x12" }, 400, "INVALID_ADDRESS", "a malformed wallet"],
      [{ wallet: good.wallet, token: good.token }, 400, "INVALID_REQUEST", "fields missing"],
      [{ ...good, revoke_others_and_reissue: "yes" }, 400, "INVALID_REQUEST", "a flag that is not a boolean"],
    ];
    for (const [body, status, code, what] of refusals) {
      assertErrorBody(await expectStatus(await recover(body), status, what), code);
    }
    const stranger = privateKeyToAccount(generatePrivateKey());
    const notFound = await expectStatus(await recover(await signed(stranger)), 404, "never paid");
    assertErrorBody(notFound, "NOT_FOUND");
    assert.match(notFound.body.error, /has not bought a key/);

    // expired: the server's clock moves past five minutes
    const old = await signed(buyer.account);
    s.server.clock.advance(5 * 60_000 + 1000);
    try {
      const expired = await expectStatus(await recover(old), 400, "expired");
      assertErrorBody(expired, "INVALID_CHALLENGE");
      assert.match(expired.body.error, /expired/);
    } finally {
      s.server.clock.advance(-(5 * 60_000 + 1000));
    }
    assert.deepEqual(await ledgerSnapshot(get().db), before, "no key issued, nothing revoked");

    // the good challenge works once
    const ok = await expectStatus(await recover(good), 200, "recovery");
    assert.deepEqual(ok.body.revoked_prefixes, []);
    const reused = await expectStatus(await recover(good), 400, "reused");
    assertErrorBody(reused, "INVALID_CHALLENGE");
    assert.match(reused.body.error, /already used/);
    assert.equal(await activeKeys(), 2);
  });

  test("three keys per wallet: concurrent recoveries stop at the cap, and a keyless purchase is refused before any money moves", async () => {
    const attempts = [await signed(buyer.account), await signed(buyer.account)];
    const results = await Promise.all(attempts.map(async (body) => (await recover(body)).status));
    assert.deepEqual(results.sort(), [200, 409], "one reaches the cap, the other is refused");
    assert.equal(await activeKeys(), 3);

    const capped = await expectStatus(await recover(await signed(buyer.account)), 409, "fourth recovery");
    assertErrorBody(capped, "KEY_CAP_REACHED");
    assert.match(capped.body.error, /revoke_others_and_reissue/);

    const before = await ledgerSnapshot(get().db);
    const balance = s.facilitator.token.balanceOf(buyer.address);
    const purchase = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1)), 409, "keyless purchase at the cap");
    assertErrorBody(purchase, "KEY_CAP_REACHED");
    assert.deepEqual(await ledgerSnapshot(get().db), before);
    assert.equal(s.facilitator.token.balanceOf(buyer.address), balance, "no payment was taken");
    // a top-up with one of the keys still works
    const topup = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1, { Authorization: `Bearer ${firstKey}` })), 200, "top-up at the cap");
    assert.equal(topup.body.api_key, null);
  });

  test("revoke_others_and_reissue revokes every active key and issues one, atomically; the revoked keys answer 401 at once", async () => {
    const prefixes = (
      await get().db.query<{ prefix: string }>("SELECT k.prefix FROM api_keys k JOIN x402_wallets w ON w.account_id = k.account_id WHERE w.wallet = $1 AND k.revoked_at IS NULL", [buyer.address])
    ).map((r) => r.prefix);
    assert.equal(prefixes.length, 3);
    await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: { Authorization: firstKey } }), 200, "the first key before");
    const res = await expectStatus(await recover(await signed(buyer.account, { revoke_others_and_reissue: true })), 200, "revoke and reissue");
    assert.deepEqual([...res.body.revoked_prefixes].sort(), [...prefixes].sort());
    assert.equal(await activeKeys(), 1);
    const revoked = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: { Authorization: firstKey } }), 401, "a revoked key");
    assertErrorBody(revoked, "UNAUTHORIZED");
    const fresh = await expectStatus(await fetch(`${s.server.url}/api/v1/usage`, { headers: { Authorization: res.body.api_key } }), 200, "the new key");
    assert.equal(fresh.body.data.credits.available, 24, "the credits stay with the account");
  });
});

eachDatabase("x402 loyalty packs", (get) => {
  const s = purchaseSuite(get);

  test("the 10th and 20th settled purchases of a wallet add one Agent pack; bonuses do not count", async () => {
    const buyer = await newBuyer(s.facilitator, 100);
    const first = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1)), 200, "purchase 1");
    const auth = { Authorization: `Bearer ${first.body.api_key}` };
    let expected = 12;
    for (let n = 2; n <= 20; n++) {
      const res = await expectStatus(await buyer.pay(`${s.server.url}/api/x402/buy`, buyInit(1, auth)), 200, `purchase ${n}`);
      expected += 12;
      if (n % 10 === 0) {
        expected += 12;
        assert.deepEqual(res.body.loyalty_bonus, { purchase_count: n, matches_added: 12 }, `purchase ${n}`);
      } else {
        assert.equal(res.body.loyalty_bonus, undefined, `purchase ${n} earns no bonus`);
      }
      assert.equal(res.body.matches_available, expected, `purchase ${n}`);
    }
    const [wallet] = await get().db.query<{ purchases: number; account_id: string }>("SELECT purchases, account_id FROM x402_wallets WHERE wallet = $1", [buyer.address]);
    assert.equal(wallet.purchases, 20, "bonuses are not purchases");
    const bonuses = await get().db.query<{ grant_key: string; matches: number }>(
      "SELECT grant_key, matches FROM credit_grants WHERE account_id = $1 AND grant_key LIKE 'x402-loyalty:%' ORDER BY id",
      [wallet.account_id],
    );
    assert.deepEqual([...bonuses].map((b) => ({ ...b })), [
      { grant_key: `x402-loyalty:${buyer.address}:10`, matches: 12 },
      { grant_key: `x402-loyalty:${buyer.address}:20`, matches: 12 },
    ]);
    assert.equal(s.facilitator.token.balanceOf(buyer.address), 80_000_000n, "20 purchases paid, bonuses free");
  });
});

/** A JSON-RPC endpoint whose one contract wallet accepts exactly one signature (ERC-1271 through viem's ERC-6492 validator call). */
async function smartWalletRpc(wallet: string, accepted: string): Promise<{ url: string; calls: number; close: () => Promise<void> }> {
  const state = { url: "", calls: 0, close: async () => {} };
  const server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const request = JSON.parse(body) as { id: number; method: string };
    let result: string;
    if (request.method === "eth_call") {
      state.calls++;
      // the validator's constructor arguments carry the signer and the signature
      const valid = body.toLowerCase().includes(wallet.slice(2).toLowerCase()) && body.toLowerCase().includes(accepted.slice(2).toLowerCase());
      result = `0x${"0".repeat(63)}${valid ? "1" : "0"}`;
    } else if (request.method === "eth_chainId") result = "0x1";
    else {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "method not found" } }));
      return;
    }
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ jsonrpc: "2.0", id: request.id, result }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return state;
}

eachDatabase("x402 key recovery by a smart wallet (ERC-1271 through ETH_RPC_URL)", (get) => {
  const wallet = privateKeyToAccount(generatePrivateKey()).address.toLowerCase();
  const accepted = `0x${"ab".repeat(97)}`;
  let rpc: Awaited<ReturnType<typeof smartWalletRpc>>;
  let server: TestServer;
  let plain: TestServer;

  before(async () => {
    rpc = await smartWalletRpc(wallet, accepted);
    const { db } = get();
    // the contract wallet bought a key earlier: its account, as a keyless purchase leaves it
    const { accountId } = await createAccount(db, { hasAccount: false, now: new Date() });
    await db.query("INSERT INTO x402_wallets (wallet, account_id, purchases, created_at) VALUES ($1, $2, 1, now())", [wallet, accountId]);
    server = await startServer(db, { clock: createClock(new Date()), env: { ETH_RPC_URL: rpc.url } });
    plain = await startServer(db, { clock: createClock(new Date()) });
  });
  after(async () => {
    await server.close();
    await plain.close();
    await rpc.close();
  });

  async function attempt(target: TestServer, signature: string) {
    const c = (await expectStatus(await fetch(`${target.url}/api/x402/recover?wallet=${wallet}`), 200)).body;
    return await fetch(`${target.url}/api/x402/recover`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ wallet, issued_at: c.issued_at, token: c.token, signature }),
    });
  }

  test("the contract's answer decides: its signature recovers a key, another is 401; without ETH_RPC_URL it is 401", async () => {
    const refused = await expectStatus(await attempt(server, `0x${"cd".repeat(97)}`), 401, "a signature the wallet refuses");
    assertErrorBody(refused, "INVALID_SIGNATURE");
    const ok = await expectStatus(await attempt(server, accepted), 200, "the wallet's signature");
    assert.match(ok.body.api_key, /^wid_live_/);
    assert.ok(rpc.calls >= 2, "asked the chain both times");
    assertErrorBody(await expectStatus(await attempt(plain, accepted), 401, "no RPC: ordinary accounts only"), "INVALID_SIGNATURE");
  });
});
