// The live source adapters against their fakes over HTTP: wire format, credentials, "nothing
// found", and which failures are worth retrying; and the retry loop itself.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { readConfig } from "../../src/config.ts";
import { encodeErrorResult, encodeFunctionData, encodeFunctionResult, multicall3Abi, type Hex } from "viem";
import { aggregate3CallData, aggregate3Results, ENS_UNIVERSAL_RESOLVER, ensSource, reverseCallData, reverseName } from "../../src/sources/ens.ts";
import { configuredSources } from "../../src/sources/index.ts";
import { neynarSource } from "../../src/sources/neynar.ts";
import { UpstreamError, withRetries } from "../../src/sources/types.ts";
import {
  aggregate3Answer,
  aggregate3Calls,
  resolverNotFound,
  REVERT_UNEXPECTED,
  reverseLookupAddress,
  reverseResult,
  startFakeEthRpc,
  startFakeNeynar,
  universalResolverAbi,
  type FakeUpstream,
} from "../support/upstreams.ts";
import { ensNameOf, farcasterUserOf, liveEns, liveFarcaster, unknown } from "./support.ts";

let neynar: FakeUpstream;
let rpc: FakeUpstream;

before(async () => {
  neynar = await startFakeNeynar(farcasterUserOf, { apiKey: "k1" });
  rpc = await startFakeEthRpc(ensNameOf);
});
after(async () => {
  await neynar.close();
  await rpc.close();
});

async function rejection(p: Promise<unknown>): Promise<UpstreamError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof UpstreamError, String(err));
    return err;
  }
  assert.fail("expected an UpstreamError");
}

test("neynar: users by verified address become farcaster and twitter observations; none found is an empty answer", async () => {
  const source = neynarSource({ baseUrl: neynar.url, apiKey: "k1", timeoutMs: 2000 });
  const found = await source.resolve([liveFarcaster(2), liveFarcaster(3), unknown(1)]);
  assert.deepEqual(found.get(liveFarcaster(2)), [
    { kind: "farcaster", route: "farcaster-verification", fid: 1002, username: "live2", followers: 2 },
    { kind: "twitter", route: "farcaster-x-verified", handle: "LiveX2" },
  ]);
  assert.equal(found.get(liveFarcaster(3))?.length, 1);
  assert.equal(found.has(unknown(1)), false);
  assert.deepEqual(neynar.asked.at(-1), [liveFarcaster(2), liveFarcaster(3), unknown(1)]);
  assert.equal((await source.resolve([unknown(2)])).size, 0, "404 No users found is an answer");
});

test("neynar: a wrong key is not retried; 429 carries Retry-After; a slow answer times out and is retryable", async () => {
  const wrongKey = await rejection(neynarSource({ baseUrl: neynar.url, apiKey: "nope", timeoutMs: 2000 }).resolve([unknown(1)]));
  assert.equal(wrongKey.retryable, false);
  const source = neynarSource({ baseUrl: neynar.url, apiKey: "k1", timeoutMs: 150 });
  neynar.behave({ rateLimit: 1 });
  const limited = await rejection(source.resolve([unknown(1)]));
  assert.equal(limited.retryable, true);
  neynar.behave({ delayMs: 400 });
  const slow = await rejection(source.resolve([unknown(1)]));
  assert.equal(slow.retryable, true);
  assert.match(slow.message, /unreachable/);
  neynar.behave({});
});

test("ens: reverse resolution in one multicall against the JSON-RPC fake, names and no names", async () => {
  const source = ensSource({ rpcUrl: rpc.url, timeoutMs: 2000 });
  const before = rpc.requests;
  const found = await source.resolve([liveEns(1), unknown(1), liveEns(2)]);
  assert.deepEqual([...found], [
    [liveEns(1), [{ kind: "ens", route: "ens-primary", name: "live1.eth" }]],
    [liveEns(2), [{ kind: "ens", route: "ens-primary", name: "live2.eth" }]],
  ]);
  assert.equal(rpc.requests - before, 1, "three lookups in one eth_call");
  // 500 lookups: ten aggregate3 calls of 50, in one JSON-RPC batch
  const many = Array.from({ length: 500 }, (_, i) => (i % 2 ? liveEns(1000 + i) : unknown(1000 + i)));
  const asked = rpc.asked.length;
  const names = await source.resolve(many);
  assert.equal(names.size, 250);
  assert.equal(names.get(liveEns(1001))?.[0].name, "live1001.eth");
  assert.deepEqual(rpc.asked.slice(asked).flat(), many, "every address asked once");
  rpc.behave({ rateLimit: 1 });
  assert.equal((await rejection(source.resolve([liveEns(1)]))).retryable, true);
  rpc.behave({ fail: 1 });
  assert.equal((await rejection(source.resolve([liveEns(1)]))).retryable, true);
  rpc.behave({});
});

test("ens: a lookup the multicall cannot settle is asked again alone through viem's getEnsName", async () => {
  const odd = await startFakeEthRpc((a) => (a === unknown(7) ? REVERT_UNEXPECTED : ensNameOf(a)));
  try {
    const source = ensSource({ rpcUrl: odd.url, timeoutMs: 2000 });
    const found = await source.resolve([liveEns(5), unknown(6)]);
    assert.deepEqual([...found.keys()], [liveEns(5)]);
    assert.deepEqual(odd.asked, [[liveEns(5), unknown(6)]], "settled by the multicall alone");
    const failed = await rejection(source.resolve([liveEns(5), unknown(7)]));
    assert.equal(failed.retryable, true, "viem does not read the revert as no name: the job retries");
    assert.deepEqual(odd.asked.slice(1), [[liveEns(5), unknown(7)], [unknown(7)]], "the unsettled one asked again, alone");
  } finally {
    await odd.close();
  }
});

test("ens: aggregate3's answer read by its layout gives what the ABI decoder gives; a cut answer is refused", () => {
  const results: Array<{ success: boolean; returnData: Hex }> = [
    { success: true, returnData: `0x${"ab".repeat(96)}` },
    { success: false, returnData: "0x77209fe8" },
    { success: false, returnData: "0x" },
    { success: true, returnData: `0x${"01".repeat(33)}` },
  ];
  const answer = encodeFunctionResult({ abi: multicall3Abi, functionName: "aggregate3", result: results });
  assert.deepEqual(aggregate3Results(answer), results);
  assert.deepEqual(aggregate3Results(encodeFunctionResult({ abi: multicall3Abi, functionName: "aggregate3", result: [] })), []);
  assert.equal(aggregate3Results(answer.slice(0, -64)), null);
  assert.equal(aggregate3Results("0x"), null);
});

test("ens: the multicall written by its layout is what the ABI encoder writes, and the fake reads and answers it as viem would", () => {
  const calls = [liveEns(1), unknown(2), liveEns(3)].map(reverseCallData);
  const odd: Hex[] = ["0x", "0x1234", `0x${"ab".repeat(32)}`, `0x${"cd".repeat(33)}`];
  for (const data of [calls, odd, []]) {
    const viem = encodeFunctionData({
      abi: multicall3Abi,
      functionName: "aggregate3",
      args: [data.map((callData) => ({ target: ENS_UNIVERSAL_RESOLVER, allowFailure: true, callData }))],
    });
    assert.equal(aggregate3CallData(ENS_UNIVERSAL_RESOLVER, data), viem);
    assert.deepEqual(
      aggregate3Calls(viem),
      data.map((callData) => ({ target: ENS_UNIVERSAL_RESOLVER, callData })),
    );
  }
  const other = encodeFunctionData({ abi: universalResolverAbi, functionName: "reverseWithGateways", args: [liveEns(4) as Hex, 60n, ["https://gw"]] });
  assert.deepEqual([...calls, other].map(reverseLookupAddress), [liveEns(1), unknown(2), liveEns(3), liveEns(4)]);
  assert.equal(resolverNotFound(unknown(2)), encodeErrorResult({ abi: universalResolverAbi, errorName: "ResolverNotFound", args: [unknown(2) as Hex] }));
  for (const name of ["", "live1.eth", "ünïcødé.eth", `${"x".repeat(40)}.eth`]) {
    const encoded = encodeFunctionResult({
      abi: universalResolverAbi,
      functionName: "reverseWithGateways",
      result: [name, `0x${"1".repeat(40)}`, `0x${"2".repeat(40)}`],
    });
    assert.equal(reverseResult(name, `0x${"1".repeat(40)}`, `0x${"2".repeat(40)}`), encoded);
    assert.equal(reverseName(encoded), name, "the worker reads the name by layout as viem decodes it");
  }
  const results = [
    { success: true, returnData: `0x${"ab".repeat(96)}` as Hex },
    { success: false, returnData: "0x77209fe8" as Hex },
    { success: false, returnData: "0x" as Hex },
  ];
  assert.equal(aggregate3Answer(results), encodeFunctionResult({ abi: multicall3Abi, functionName: "aggregate3", result: results }));
});

test("withRetries: retries retryable failures up to the attempts, honours Retry-After, stops at a non-retryable one", async () => {
  const waits: number[] = [];
  const sleep = async (ms: number) => void waits.push(ms);
  let calls = 0;
  const value = await withRetries(
    async () => {
      if (++calls < 3) throw new UpstreamError("busy", { retryable: true, retryAfterMs: 1000 });
      return "ok";
    },
    { attempts: 3, baseDelayMs: 10, maxDelayMs: 5000, sleep },
  );
  assert.equal(value, "ok");
  assert.deepEqual(waits, [1000, 1000]);
  calls = 0;
  await rejection(withRetries(async () => { calls++; throw new UpstreamError("no", { retryable: false }); }, { attempts: 5, baseDelayMs: 1, maxDelayMs: 1, sleep }));
  assert.equal(calls, 1);
  calls = 0;
  await rejection(withRetries(async () => { calls++; throw new UpstreamError("down", { retryable: true }); }, { attempts: 4, baseDelayMs: 1, maxDelayMs: 1, sleep }));
  assert.equal(calls, 4);
});

test("an upstream left unset is off, and the log says which stage is skipped", () => {
  const lines: string[] = [];
  assert.deepEqual(configuredSources(readConfig({}), (l) => lines.push(l)), []);
  assert.deepEqual(lines, [
    "Farcaster live source is off (NEYNAR_API_URL unset): jobs skip the live stage",
    "ENS live source is off (ETH_RPC_URL unset): jobs skip the onchain stage",
  ]);
  const both = configuredSources(readConfig({ NEYNAR_API_URL: neynar.url, ETH_RPC_URL: rpc.url }), () => {});
  assert.deepEqual(both.map((s) => [s.name, s.stage]), [["neynar", "live"], ["ens", "onchain"]]);
});
