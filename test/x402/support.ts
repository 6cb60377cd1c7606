// The purchase suites' fixtures: the local facilitator (scripts/facilitator.ts) as a real HTTP
// server, a walletid server configured to sell through it, and buyers paying with the official
// client (@x402/fetch wrapFetchWithPayment over a viem local account).
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before } from "node:test";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { encodePaymentSignatureHeader } from "@x402/core/http";
import { ExactEvmScheme } from "@x402/evm/exact/client";
import { authorizationTypes } from "@x402/evm";
import { generatePrivateKey, privateKeyToAccount, type PrivateKeyAccount } from "viem/accounts";
import { toHex, type Hex } from "viem";
import type { Db } from "../../src/db/types.ts";
import { startFacilitator, type Facilitator } from "../../scripts/facilitator.ts";
import { createClock, startServer, type TestServer } from "../support/server.ts";

export const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const PAY_TO = "0x5e11e5000000000000000000000000000000a402";

export interface Buyer {
  account: PrivateKeyAccount;
  address: string;
  /** fetch that pays 402 challenges with this wallet (the official client). */
  pay: typeof fetch;
  /** Every request the paying fetch sent, to replay a captured PAYMENT-SIGNATURE. */
  sent: Request[];
}

/** A wallet (a new one unless given) funded with `dollars` USDC at the facilitator's faucet, paying through @x402/fetch. */
export async function newBuyer(facilitator: Facilitator, dollars = 100, account = privateKeyToAccount(generatePrivateKey())): Promise<Buyer> {
  const res = await fetch(`${facilitator.url}/faucet`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ address: account.address, amount: String(BigInt(dollars) * 1_000_000n) }),
  });
  assert.equal(res.status, 200, await res.clone().text());
  const sent: Request[] = [];
  const recording = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    sent.push(req.clone());
    return await fetch(req);
  }) as typeof fetch;
  // the client caps one payment at 1 dollar by default: a buyer of up to 25 packs raises it
  const client = new x402Client().register("eip155:8453", new ExactEvmScheme(account)).setSpendControls({ maxAmountPerPayment: "$25" });
  return { account, address: account.address.toLowerCase(), pay: wrapFetchWithPayment(recording, client), sent };
}

/** The PAYMENT-SIGNATURE of the buyer's last paid request. */
export function lastSignature(buyer: Buyer): string {
  const paid = buyer.sent.filter((r) => r.headers.has("PAYMENT-SIGNATURE"));
  assert.ok(paid.length > 0, "the client sent a paid request");
  return paid[paid.length - 1].headers.get("PAYMENT-SIGNATURE")!;
}

export interface Authorization {
  from: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: Hex;
}

/**
 * A payment signed by hand (EIP-712 through viem, encoded by @x402/core), for the cases the
 * official client never produces: wrong amounts, recipients, windows or domains.
 */
export async function signPayment(
  account: PrivateKeyAccount,
  options: {
    quantity?: number;
    value?: string;
    to?: string;
    validAfter?: number;
    validBefore?: number;
    nonce?: Hex;
    domain?: { name?: string; version?: string; chainId?: number; verifyingContract?: Hex };
    accepted?: Record<string, unknown>;
    resourceUrl?: string;
  } = {},
): Promise<{ header: string; authorization: Authorization }> {
  const quantity = options.quantity ?? 1;
  const now = Math.floor(Date.now() / 1000);
  const authorization: Authorization = {
    from: account.address,
    to: options.to ?? PAY_TO,
    value: options.value ?? String(quantity * 1_000_000),
    validAfter: String(options.validAfter ?? now - 600),
    validBefore: String(options.validBefore ?? now + 120),
    nonce: options.nonce ?? toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await account.signTypedData({
    domain: { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: USDC as Hex, ...options.domain },
    types: authorizationTypes,
    primaryType: "TransferWithAuthorization",
    message: {
      from: account.address,
      to: authorization.to as Hex,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce,
    },
  });
  const accepted = {
    scheme: "exact",
    network: "eip155:8453",
    asset: USDC,
    amount: String(quantity * 1_000_000),
    payTo: PAY_TO,
    maxTimeoutSeconds: 120,
    extra: { name: "USD Coin", version: "2" },
    ...options.accepted,
  };
  const header = encodePaymentSignatureHeader({
    x402Version: 2,
    resource: { url: options.resourceUrl ?? "http://127.0.0.1/api/x402/buy", description: "", mimeType: "application/json" },
    accepted: accepted as never,
    payload: { authorization, signature },
  });
  return { header, authorization };
}

/** A fault in front of the facilitator: a real HTTP proxy that can delay or answer for it. */
export interface FaultyFacilitator {
  url: string;
  /**
   * `slow`: waits `delayMs` before forwarding anything; `slow-settle`: only /settle (which then
   * still goes through, late); `settle-false`: /settle answers 200 success:false; `settle-500`: 500.
   */
  mode: "pass" | "slow" | "slow-settle" | "settle-false" | "settle-500";
  delayMs: number;
  close(): Promise<void>;
}

export async function faultyFacilitator(target: string): Promise<FaultyFacilitator> {
  const state: FaultyFacilitator = { url: "", mode: "pass", delayMs: 0, close: async () => {} };
  const sockets = new Set<import("node:net").Socket>();
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    if (state.mode === "slow" || (state.mode === "slow-settle" && req.url === "/settle")) await new Promise((r) => setTimeout(r, state.delayMs));
    if (req.url === "/settle" && state.mode === "settle-false") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ success: false, errorReason: "invalid_exact_evm_transaction_failed", transaction: "", network: "eip155:8453" }));
      return;
    }
    if (req.url === "/settle" && state.mode === "settle-500") {
      res.writeHead(500, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "internal error" }));
      return;
    }
    try {
      const upstream = await fetch(target + req.url, { method: req.method, headers: { "Content-Type": "application/json" }, body: req.method === "GET" ? undefined : body });
      res.writeHead(upstream.status, { "Content-Type": "application/json" });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    } catch {
      res.destroy();
    }
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    });
  return state;
}

export interface PurchaseSuite {
  facilitator: Facilitator;
  server: TestServer;
}

/** Hooks of the calling describe: a facilitator and a server selling through it (clock at real time). */
export function purchaseSuite(get: () => { db: Db }, options: { env?: Record<string, string>; facilitatorUrl?: (real: string) => Promise<string> } = {}): PurchaseSuite {
  const suite = {} as PurchaseSuite;
  before(async () => {
    suite.facilitator = await startFacilitator();
    const url = options.facilitatorUrl ? await options.facilitatorUrl(suite.facilitator.url) : suite.facilitator.url;
    suite.server = await startServer(get().db, {
      clock: createClock(new Date()),
      env: { X402_FACILITATOR_URL: url, X402_PAY_TO: PAY_TO, ...options.env },
    });
  });
  after(async () => {
    await suite.server?.close();
    await suite.facilitator?.close();
  });
  return suite;
}

export function buyInit(quantity?: number, headers: Record<string, string> = {}): RequestInit {
  return {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: quantity === undefined ? undefined : JSON.stringify({ quantity }),
  };
}

/** Everything a purchase can change, to compare before and after a refusal. */
export async function ledgerSnapshot(db: Db): Promise<unknown> {
  const read = async (text: string) => [...(await db.query(text))];
  return {
    grants: await read("SELECT account_id, pack, matches, grant_key FROM credit_grants ORDER BY id"),
    accounts: await read("SELECT id, email, free_allowance, has_account FROM accounts ORDER BY id"),
    keys: await read("SELECT id, account_id, revoked_at FROM api_keys ORDER BY id"),
    wallets: await read("SELECT wallet, account_id, purchases FROM x402_wallets ORDER BY wallet"),
    granted: await read("SELECT id FROM x402_payments WHERE state = 'granted' ORDER BY id"),
  };
}
