// Local fakes of the job's live upstreams, as real HTTP servers on 127.0.0.1 speaking their wire
// formats: a Neynar v2 bulk-by-address API and an Ethereum JSON-RPC endpoint answering the
// Universal Resolver calls viem's getEnsName makes. Both can be slow, fail or rate-limit.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  decodeFunctionData,
  encodeErrorResult,
  encodeFunctionData,
  multicall3Abi,
  parseAbi,
  toFunctionSelector,
  type Hex,
} from "viem";

export interface Behaviour {
  /** Milliseconds before every answer. */
  delayMs?: number;
  /** The next n requests answer HTTP 500 (Infinity: all of them). */
  fail?: number;
  /** Every request this picks (by its URL and body) answers HTTP 500. */
  failWhen?: (url: string, body: string) => boolean;
  /** The next n requests answer HTTP 429 with Retry-After. */
  rateLimit?: number;
}

export interface FakeUpstream {
  url: string;
  /** Addresses asked, one array per request that was answered 200. */
  asked: string[][];
  /** Every request received, answered or refused. */
  requests: number;
  behave(b: Behaviour): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

async function startFake(handle: (req: IncomingMessage, body: string, res: ServerResponse, asked: string[][]) => void): Promise<FakeUpstream> {
  let behaviour: Required<Omit<Behaviour, "failWhen">> & Pick<Behaviour, "failWhen"> = { delayMs: 0, fail: 0, rateLimit: 0 };
  const fake: FakeUpstream = {
    url: "",
    asked: [],
    requests: 0,
    behave(b) {
      behaviour = { delayMs: 0, fail: 0, rateLimit: 0, ...b };
    },
    close: async () => {},
  };
  const server = createServer(async (req, res) => {
    fake.requests++;
    const body = await readBody(req);
    if (behaviour.delayMs > 0) await new Promise((r) => setTimeout(r, behaviour.delayMs));
    if (behaviour.rateLimit > 0) {
      behaviour.rateLimit--;
      res.writeHead(429, { "content-type": "application/json", "retry-after": "0" });
      res.end(JSON.stringify({ message: "Rate limit exceeded", code: "RateLimitExceeded" }));
      return;
    }
    if (behaviour.failWhen?.(req.url ?? "", body)) {
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Internal server error" }));
      return;
    }
    if (behaviour.fail > 0) {
      behaviour.fail--;
      res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "Internal server error" }));
      return;
    }
    handle(req, body, res, fake.asked);
  });
  // Node's default (5 s): the client keeps a connection as long as the server's hint less one
  // second (undici), so a 1 s hint made every request open a new connection, which real upstreams,
  // keeping theirs for a minute or more, do not make a client do.
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return fake;
}

export interface FakeFarcasterUser {
  fid: number;
  username: string;
  followers: number;
  /** An X account verified on the Farcaster account. */
  x?: string;
}

/** A User object as Neynar's OpenAPI describes it, with its required fields. */
function neynarUser(address: string, u: FakeFarcasterUser) {
  return {
    object: "user",
    fid: u.fid,
    username: u.username,
    display_name: u.username,
    custody_address: `0x${"c".repeat(40)}`,
    registered_at: "2024-01-01T00:00:00.000Z",
    pfp_url: null,
    profile: { bio: { text: "" } },
    follower_count: u.followers,
    following_count: 1,
    verifications: [address],
    auth_addresses: [],
    verified_addresses: { eth_addresses: [address], sol_addresses: [], primary: { eth_address: address, sol_address: null } },
    verified_accounts: u.x ? [{ platform: "x", username: u.x }] : [],
  };
}

/**
 * GET /v2/farcaster/user/bulk-by-address/?addresses=a,b&address_types=verified_address with
 * x-api-key: an object keyed by address of User arrays, or 404 ErrorRes when none has a user.
 */
export async function startFakeNeynar(
  users: Map<string, FakeFarcasterUser> | ((address: string) => FakeFarcasterUser | undefined),
  options: { apiKey?: string } = {},
): Promise<FakeUpstream> {
  const lookup = typeof users === "function" ? users : (a: string) => users.get(a);
  return await startFake((req, _body, res, asked) => {
    const url = new URL(req.url ?? "/", "http://x");
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (url.pathname !== "/v2/farcaster/user/bulk-by-address/" || req.method !== "GET") {
      return json(404, { message: "Not found", code: "NotFound" });
    }
    if (options.apiKey && req.headers["x-api-key"] !== options.apiKey) {
      return json(401, { message: "Invalid API key", code: "Unauthorized" });
    }
    const addresses = (url.searchParams.get("addresses") ?? "").split(",").filter(Boolean).map((a) => a.toLowerCase());
    if (addresses.length === 0 || addresses.length > 350) {
      return json(400, { message: "addresses must hold 1 to 350 addresses", code: "InvalidField", property: "addresses" });
    }
    asked.push(addresses);
    const body: Record<string, unknown[]> = {};
    for (const address of addresses) {
      const user = lookup(address);
      if (user) body[address] = [neynarUser(address, user)];
    }
    if (Object.keys(body).length === 0) return json(404, { message: "No users found for the given addresses", code: "NotFound" });
    return json(200, body);
  });
}

/** The ENS Universal Resolver on mainnet, as viem's chain definition names it. */
export const UNIVERSAL_RESOLVER = "0xeeeeeeee14d718c2b47d9923deab1335e144eeee";
/** Multicall3, at the same address on every chain. */
export const MULTICALL3 = "0xca11bde05977b3631167028862be2a173976ca11";

export const universalResolverAbi = parseAbi([
  "function reverseWithGateways(bytes reverseName, uint256 coinType, string[] gateways) view returns (string resolvedName, address resolver, address reverseResolver)",
  "error ResolverNotFound(bytes name)",
  "error Unexpected()",
]);

/** What the fake's name lookup returns for an address whose lookup reverts with an error viem does not read as "no name". */
export const REVERT_UNEXPECTED = "!unexpected";

// The fake reads and writes the shapes it meets all the time by their fixed ABI layout and falls back
// to viem's decoder for anything else: through viem's ABI coder it spent about 75 us of CPU a lookup
// (on the bench's two cores, beside the worker and PostgreSQL), far more than the client asking.
// What it answers is the same either way (test/jobs/sources.test.ts compares the two).
const PLACEHOLDER = "11".repeat(20);
/** getEnsName's reverseWithGateways call (coin type 60, its local batch gateway), around a placeholder address. */
const [REVERSE_HEAD, REVERSE_TAIL] = encodeFunctionData({
  abi: universalResolverAbi,
  functionName: "reverseWithGateways",
  args: [`0x${PLACEHOLDER}`, 60n, ["x-batch-gateway:true"]],
}).split(PLACEHOLDER);
/** The ResolverNotFound revert of an address, around a placeholder address. */
const [NOT_FOUND_HEAD, NOT_FOUND_TAIL] = encodeErrorResult({
  abi: universalResolverAbi,
  errorName: "ResolverNotFound",
  args: [`0x${PLACEHOLDER}`],
}).split(PLACEHOLDER);
const AGGREGATE3 = toFunctionSelector("aggregate3((address,bool,bytes)[])");

const abiWord = (n: number) => n.toString(16).padStart(64, "0");
const padded = (hex: string) => hex.padEnd(Math.ceil(hex.length / 64) * 64, "0");

/** The address a reverseWithGateways call asks about, lowercased. */
export function reverseLookupAddress(data: Hex): string {
  if (data.length === REVERSE_HEAD.length + 40 + REVERSE_TAIL.length && data.startsWith(REVERSE_HEAD) && data.endsWith(REVERSE_TAIL)) {
    return `0x${data.slice(REVERSE_HEAD.length, REVERSE_HEAD.length + 40)}`;
  }
  const { args } = decodeFunctionData({ abi: universalResolverAbi, data });
  return (args[0] as string).toLowerCase();
}

/** The ResolverNotFound revert data for a lookup of `address`. */
export function resolverNotFound(address: string): Hex {
  return `${NOT_FOUND_HEAD}${address.slice(2)}${NOT_FOUND_TAIL}` as Hex;
}

/** reverseWithGateways' result (string name, address resolver, address reverseResolver). */
export function reverseResult(name: string, resolver: string, reverseResolver: string): Hex {
  const bytes = Buffer.from(name, "utf8").toString("hex");
  const address = (a: string) => a.slice(2).toLowerCase().padStart(64, "0");
  return `0x${abiWord(96)}${address(resolver)}${address(reverseResolver)}${abiWord(bytes.length / 2)}${padded(bytes)}` as Hex;
}

/** aggregate3's calls (target, callData), read by layout; viem decodes what does not hold together. */
export function aggregate3Calls(data: Hex): Array<{ target: string; callData: Hex }> {
  const hex = data.slice(10);
  const word = (at: number) => (at * 2 + 64 <= hex.length ? parseInt(hex.slice(at * 2, at * 2 + 64), 16) : NaN);
  const calls: Array<{ target: string; callData: Hex }> = [];
  const array = word(0);
  const count = data.startsWith(AGGREGATE3) ? word(array) : NaN;
  for (let i = 0; Number.isSafeInteger(count) && i < count; i++) {
    const tuple = array + 32 + word(array + 32 + i * 32);
    const bytes = tuple + word(tuple + 64);
    const end = (bytes + 32 + word(bytes)) * 2;
    if (!Number.isSafeInteger(end) || end > hex.length) break;
    calls.push({ target: `0x${hex.slice((tuple + 12) * 2, (tuple + 32) * 2)}`, callData: `0x${hex.slice((bytes + 32) * 2, end)}` });
  }
  if (calls.length === count) return calls;
  const { args } = decodeFunctionData({ abi: multicall3Abi, data });
  return [...(args[0] as ReadonlyArray<{ target: string; callData: Hex }>)];
}

/** aggregate3's answer, (bool success, bytes returnData)[], written by layout. */
export function aggregate3Answer(results: Array<{ success: boolean; returnData: Hex }>): Hex {
  const tuples = results.map(({ success, returnData }) => {
    const bytes = returnData.slice(2);
    return `${abiWord(success ? 1 : 0)}${abiWord(64)}${abiWord(bytes.length / 2)}${padded(bytes)}`;
  });
  const offsets: string[] = [];
  let at = results.length * 32;
  for (const tuple of tuples) {
    offsets.push(abiWord(at));
    at += tuple.length / 2;
  }
  return `0x${abiWord(32)}${abiWord(results.length)}${offsets.join("")}${tuples.join("")}` as Hex;
}

/**
 * A JSON-RPC endpoint (single and batched requests) answering eth_chainId and the eth_call of
 * reverseWithGateways on the Universal Resolver, directly or inside Multicall3's aggregate3: the
 * primary name, or the ResolverNotFound revert viem reads as "no name".
 */
export async function startFakeEthRpc(names: Map<string, string> | ((address: string) => string | undefined)): Promise<FakeUpstream> {
  const lookup = typeof names === "function" ? names : (a: string) => names.get(a);
  return await startFake((_req, body, res, asked) => {
    const batchAsked: string[] = [];
    /** One reverseWithGateways call: its result, or the revert data of "no name". */
    const reverse = (data: Hex): { success: boolean; returnData: Hex } => {
      const address = reverseLookupAddress(data);
      batchAsked.push(address);
      const name = lookup(address);
      if (name === REVERT_UNEXPECTED) {
        return { success: false, returnData: encodeErrorResult({ abi: universalResolverAbi, errorName: "Unexpected" }) };
      }
      if (!name) return { success: false, returnData: resolverNotFound(address) };
      return { success: true, returnData: reverseResult(name, `0x${"1".repeat(40)}`, `0x${"2".repeat(40)}`) };
    };
    const answer = (call: { id: unknown; method?: string; params?: any[] }) => {
      const reply = (r: object) => ({ jsonrpc: "2.0", id: call.id, ...r });
      if (call.method === "eth_chainId") return reply({ result: "0x1" });
      if (call.method === "eth_blockNumber") return reply({ result: "0x1000000" });
      if (call.method !== "eth_call") return reply({ error: { code: -32601, message: "Method not found" } });
      const tx = call.params?.[0] ?? {};
      const to = String(tx.to).toLowerCase();
      if (to === MULTICALL3) {
        const results = aggregate3Calls(tx.data as Hex).map((c) =>
          c.target.toLowerCase() === UNIVERSAL_RESOLVER ? reverse(c.callData) : { success: true, returnData: "0x" as Hex },
        );
        return reply({ result: aggregate3Answer(results) });
      }
      if (to !== UNIVERSAL_RESOLVER) return reply({ result: "0x" });
      const { success, returnData } = reverse(tx.data as Hex);
      return success ? reply({ result: returnData }) : reply({ error: { code: 3, message: "execution reverted", data: returnData } });
    };
    const parsed = JSON.parse(body);
    const out = Array.isArray(parsed) ? parsed.map(answer) : answer(parsed);
    if (batchAsked.length > 0) asked.push(batchAsked);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(out));
  });
}
