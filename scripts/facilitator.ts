// npm run facilitator: a local x402 facilitator for trying and testing payments. It runs the real
// @x402/evm `exact` (EIP-3009) and `upto` (Permit2) facilitator schemes (through @x402/core's
// x402Facilitator) over an in-memory USDC with Permit2 (scripts/x402-token.ts), on
// 127.0.0.1:$FACILITATOR_PORT (default 8402):
//   GET  /supported          the kinds it settles (x402 v2, exact and upto, eip155:8453)
//   POST /verify, /settle    {x402Version, paymentPayload, paymentRequirements}, the x402 facilitator API
//   POST /faucet             {address, amount} (amount: a string of atomic units) -> {address, balance}
//   GET  /balance/{address}  -> {address, balance}
//   POST /cancel             {authorizer, nonce, signature}: FiatToken's cancelAuthorization (the
//                            authorizer's EIP-712 CancelAuthorization signature) -> {transaction}
//   POST /rpc                a JSON-RPC view of the token for X402_RPC_URL: eth_chainId,
//                            eth_blockNumber, eth_getLogs (its Transfer, AuthorizationUsed and
//                            AuthorizationCanceled events) and eth_call of authorizationState(authorizer, nonce)
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import type { AddressInfo } from "node:net";
import { realpathSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { decodeFunctionData, encodeFunctionResult, isAddressEqual, parseAbi, type Hex } from "viem";
import { x402Facilitator } from "@x402/core/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/facilitator";
import { UptoEvmScheme } from "@x402/evm/upto/facilitator";
import { Eip3009Token, type TokenOptions } from "./x402-token.ts";

const NETWORK = "eip155:8453";

export interface Facilitator {
  url: string;
  token: Eip3009Token;
  close(): Promise<void>;
}

function isAddress(value: unknown): value is string {
  return typeof value === "string" && /^0x[0-9a-fA-F]{40}$/.test(value);
}

/** The facilitator as a hono app over `token`. */
export function facilitatorApp(token: Eip3009Token, log: (line: string) => void = () => {}): Hono {
  const facilitator = new x402Facilitator().register(NETWORK, new ExactEvmScheme(token)).register(NETWORK, new UptoEvmScheme(token));
  const app = new Hono();

  const run = (operation: "verify" | "settle") =>
    app.post(`/${operation}`, async (c) => {
      let body: { paymentPayload?: unknown; paymentRequirements?: unknown };
      try {
        body = await c.req.json();
      } catch {
        return c.json({ error: "Request body is not valid JSON" }, 400);
      }
      if (!body?.paymentPayload || !body?.paymentRequirements) {
        return c.json({ error: "Missing paymentPayload or paymentRequirements" }, 400);
      }
      try {
        // both outcomes, valid or not, are HTTP 200 as the reference facilitator answers them
        const result = await facilitator[operation](body.paymentPayload as never, body.paymentRequirements as never);
        log(`${operation}: ${JSON.stringify(result)}`);
        return c.json(result);
      } catch (err) {
        log(`${operation} failed: ${err instanceof Error ? err.message : String(err)}`);
        return c.json({ error: err instanceof Error ? err.message : String(err) }, 500);
      }
    });
  run("verify");
  run("settle");

  app.get("/supported", (c) => c.json(facilitator.getSupported()));

  app.post("/faucet", async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { address?: unknown; amount?: unknown } | undefined;
    if (!isAddress(body?.address) || typeof body?.amount !== "string" || !/^\d{1,30}$/.test(body.amount)) {
      return c.json({ error: "Send {address, amount}: amount is a string of atomic units (1000000 = 1 USDC)" }, 400);
    }
    const balance = token.mint(body.address, BigInt(body.amount));
    return c.json({ address: body.address.toLowerCase(), balance: balance.toString() });
  });

  app.get("/balance/:address", (c) => {
    const address = c.req.param("address");
    if (!isAddress(address)) return c.json({ error: "Invalid address: 0x followed by 40 hex characters" }, 400);
    return c.json({ address: address.toLowerCase(), balance: token.balanceOf(address).toString() });
  });

  app.post("/cancel", async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { authorizer?: unknown; nonce?: unknown; signature?: unknown } | undefined;
    const { authorizer, nonce, signature } = body ?? {};
    if (typeof authorizer !== "string" || !isAddress(authorizer) || typeof nonce !== "string" || !/^0x[0-9a-fA-F]{64}$/.test(nonce) || typeof signature !== "string" || !/^0x[0-9a-fA-F]+$/.test(signature)) {
      return c.json({ error: "Send {authorizer, nonce, signature}: an address, a 32-byte hex nonce and the authorizer's CancelAuthorization signature" }, 400);
    }
    try {
      return c.json({ transaction: await token.cancelAuthorization(authorizer as Hex, nonce as Hex, signature as Hex) });
    } catch (err) {
      return c.json({ error: (err as Error).message }, 409);
    }
  });

  const abi = parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]);
  app.post("/rpc", async (c) => {
    const body = (await c.req.json().catch(() => undefined)) as { id?: unknown; method?: unknown; params?: unknown[] } | undefined;
    const id = body?.id ?? null;
    const fail = (message: string) => c.json({ jsonrpc: "2.0", id, error: { code: -32602, message } });
    if (body?.method === "eth_chainId") return c.json({ jsonrpc: "2.0", id, result: `0x${token.chainId.toString(16)}` });
    if (body?.method === "eth_blockNumber") return c.json({ jsonrpc: "2.0", id, result: `0x${token.blockNumber().toString(16)}` });
    if (body?.method === "eth_getLogs") {
      const filter = body.params?.[0] as { address?: string | string[]; fromBlock?: string; toBlock?: string; topics?: Array<string | null> } | undefined;
      const addresses = [filter?.address ?? []].flat();
      if (addresses.length > 0 && !addresses.some((a) => isAddress(a) && isAddressEqual(a as Hex, token.address))) return c.json({ jsonrpc: "2.0", id, result: [] });
      const block = (tag: string | undefined, otherwise: bigint) => (tag === undefined || tag === "latest" ? otherwise : tag === "earliest" ? 0n : BigInt(tag));
      const logs = token.getLogs({
        fromBlock: block(filter?.fromBlock, token.blockNumber()),
        toBlock: block(filter?.toBlock, token.blockNumber()),
        topics: (filter?.topics ?? []).map((t) => (t === null ? null : (t as Hex))),
      });
      const hex = (n: bigint | number | null | undefined) => `0x${BigInt(n ?? 0).toString(16)}`;
      return c.json({
        jsonrpc: "2.0",
        id,
        result: logs.map((l) => ({ ...l, blockNumber: hex(l.blockNumber), logIndex: hex(l.logIndex), transactionIndex: hex(l.transactionIndex) })),
      });
    }
    if (body?.method !== "eth_call") return c.json({ jsonrpc: "2.0", id, error: { code: -32601, message: "method not supported" } });
    const call = body.params?.[0] as { to?: string; data?: string; input?: string } | undefined;
    const data = (call?.data ?? call?.input) as Hex | undefined;
    if (!call?.to || !isAddress(call.to) || !isAddressEqual(call.to as Hex, token.address) || !data) return fail("only calls to the token are answered");
    try {
      const { args } = decodeFunctionData({ abi, data });
      return c.json({ jsonrpc: "2.0", id, result: encodeFunctionResult({ abi, functionName: "authorizationState", result: token.authorizationState(args[0], args[1]) }) });
    } catch {
      return fail("only authorizationState(address,bytes32) is answered");
    }
  });

  return app;
}

/** Listens on host:port (port 0: any free port) and returns its URL. */
export async function startFacilitator(
  options: { port?: number; host?: string; token?: TokenOptions; log?: (line: string) => void } = {},
): Promise<Facilitator> {
  const token = new Eip3009Token(options.token);
  const app = facilitatorApp(token, options.log);
  const server = serve({ fetch: app.fetch, port: options.port ?? 0, hostname: options.host ?? "127.0.0.1" });
  await new Promise<void>((resolve, reject) => {
    server.once("listening", () => resolve());
    server.once("error", reject);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${options.host ?? "127.0.0.1"}:${port}`,
    token,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const raw = process.env.FACILITATOR_PORT ?? "8402";
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port > 65535) throw new Error(`Cannot start the facilitator: FACILITATOR_PORT must be a port number, not ${JSON.stringify(raw)}`);
  const verbose = process.env.LOG_LEVEL === "debug";
  const facilitator = await startFacilitator({ port, log: verbose ? (line) => console.error(line) : undefined });
  console.log(`x402 facilitator listening on ${facilitator.url} (in-memory USDC ${facilitator.token.address} on ${NETWORK}; POST /faucet to fund a wallet)`);
  const stop = () => void facilitator.close().then(() => process.exit(0));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err: Error) => {
    console.error(err.message.startsWith("Cannot") ? err.message : `Cannot start the facilitator: ${err.message}`);
    process.exit(1);
  });
}
