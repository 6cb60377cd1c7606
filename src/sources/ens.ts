// Primary ENS names by reverse resolution against ETH_RPC_URL: the Universal Resolver's
// reverseWithGateways, many addresses at a time inside one Multicall3 aggregate3 eth_call (each
// allowed to fail), several of those in one JSON-RPC batch. Retries are the job's, not viem's.
import {
  BaseError,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  http,
  HttpRequestError,
  parseAbi,
  toFunctionSelector,
  type Address,
  type Hex,
} from "viem";
import { getEnsName } from "viem/ens";
import { UpstreamError, type LiveSource, type ObservationFields } from "./types.ts";

/**
 * The ENS Universal Resolver on Ethereum mainnet (viem's `mainnet.contracts.ensUniversalResolver`),
 * named here so the worker does not load viem's table of every chain (about 55 MB resident).
 */
export const ENS_UNIVERSAL_RESOLVER: Address = "0xeeeeeeee14d718c2b47d9923deab1335e144eeee";
/** Multicall3, at the same address on every chain (viem's `mainnet.contracts.multicall3`). */
export const MULTICALL3: Address = "0xca11bde05977b3631167028862be2a173976ca11";

/** Reverse lookups per aggregate3 call: well inside the 50 M gas a node allows an eth_call. */
const LOOKUPS_PER_MULTICALL = 50;

const reverseAbi = parseAbi([
  "function reverseWithGateways(bytes lookupAddress, uint256 coinType, string[] gateways) view returns (string name, address resolver, address reverseResolver)",
]);

/**
 * The Universal Resolver's reverts that mean "no primary name", as viem's getEnsName reads them
 * (isNullUniversalResolverError). Any other failure (an OffchainLookup to follow, an unknown revert)
 * is asked again alone through getEnsName, so the answer is always the one viem would give.
 */
const NO_NAME = new Set(
  [
    "HttpError(uint16,string)",
    "ResolverError(bytes)",
    "ResolverNotContract(bytes,address)",
    "ResolverNotFound(bytes)",
    "ReverseAddressMismatch(string,bytes)",
    "UnsupportedResolverProfile(bytes4)",
  ].map((signature) => toFunctionSelector(signature)),
);

// viem's getEnsName arguments (coin type 60, its local batch gateway). Only the address differs
// from one lookup to the next, so the call data is encoded once around a placeholder and the
// address spliced in: encoding each lookup through the ABI cost more than the lookup's decoding.
const PLACEHOLDER = "11".repeat(20);
const [CALL_HEAD, CALL_TAIL] = encodeFunctionData({
  abi: reverseAbi,
  functionName: "reverseWithGateways",
  args: [`0x${PLACEHOLDER}`, 60n, ["x-batch-gateway:true"]],
}).split(PLACEHOLDER);

export function reverseCallData(address: string): Hex {
  return `${CALL_HEAD}${address.slice(2).toLowerCase()}${CALL_TAIL}` as Hex;
}

export interface EnsOptions {
  rpcUrl: string;
  timeoutMs: number;
  /** Calls per JSON-RPC batch request. */
  rpcBatchSize?: number;
}

export function ensSource(options: EnsOptions): LiveSource {
  const client = createPublicClient({
    transport: http(options.rpcUrl, {
      batch: { batchSize: options.rpcBatchSize ?? 100, wait: 0 },
      retryCount: 0,
      timeout: options.timeoutMs,
    }),
  });
  /** One aggregate3 of reverse lookups: a name, null for none, or undefined when viem must decide. */
  async function reverseMany(addresses: string[]): Promise<Array<string | null | undefined>> {
    const data = aggregate3CallData(ENS_UNIVERSAL_RESOLVER, addresses.map(reverseCallData));
    const answer = (await client.request({ method: "eth_call", params: [{ to: MULTICALL3, data }, "latest"] })) as Hex;
    const results = aggregate3Results(answer);
    if (results?.length !== addresses.length) throw new UpstreamError("the Ethereum RPC answered a malformed multicall", { retryable: true });
    return results.map(({ success, returnData }) => {
      if (success) return reverseName(returnData) || null;
      return NO_NAME.has(returnData.slice(0, 10) as Hex) ? null : undefined;
    });
  }
  return {
    name: "ens",
    stage: "onchain",
    batchSize: 500,
    async resolve(addresses) {
      const slices: string[][] = [];
      for (let i = 0; i < addresses.length; i += LOOKUPS_PER_MULTICALL) slices.push(addresses.slice(i, i + LOOKUPS_PER_MULTICALL));
      const names = (
        await Promise.all(
          slices.map((slice) =>
            reverseMany(slice).catch((err: unknown) => {
              throw classify(err);
            }),
          ),
        )
      ).flat();
      // the rare lookup the batch could not settle (CCIP-Read, an unknown revert) goes alone through viem
      await Promise.all(
        names.map(async (name, i) => {
          if (name !== undefined) return;
          names[i] = await getEnsName(client, { address: addresses[i] as Address, universalResolverAddress: ENS_UNIVERSAL_RESOLVER }).catch(
            (err: unknown) => {
              throw classify(err);
            },
          );
        }),
      );
      const out = new Map<string, ObservationFields[]>();
      names.forEach((name, i) => {
        if (name) out.set(addresses[i], [{ kind: "ens", route: "ens-primary", name }]);
      });
      return out;
    },
  };
}

const AGGREGATE3 = toFunctionSelector("aggregate3((address,bool,bytes)[])");

/** A 32-byte ABI word holding a small number. */
const abiWord = (n: number) => n.toString(16).padStart(64, "0");

/**
 * aggregate3 of calls to one target, each allowed to fail, written by its fixed ABI layout (the
 * calls' offsets, then each (address, bool, bytes) tuple): what encodeFunctionData gives, at a
 * tenth of its cost, which was a fifth of the onchain stage's CPU in the worker.
 */
export function aggregate3CallData(target: Address, calls: Hex[]): Hex {
  const head = `000000000000000000000000${target.slice(2).toLowerCase()}${abiWord(1)}${abiWord(96)}`;
  const tuples = calls.map((data) => {
    const bytes = data.slice(2);
    return `${head}${abiWord(bytes.length / 2)}${bytes.padEnd(Math.ceil(bytes.length / 64) * 64, "0")}`;
  });
  const offsets: string[] = [];
  let at = calls.length * 32;
  for (const tuple of tuples) {
    offsets.push(abiWord(at));
    at += tuple.length / 2;
  }
  return `${AGGREGATE3}${abiWord(32)}${abiWord(calls.length)}${offsets.join("")}${tuples.join("")}` as Hex;
}

/**
 * aggregate3's answer, (bool success, bytes returnData)[], read by its fixed ABI layout; null when
 * it does not hold together. Decoding it through the ABI was a tenth of the worker's CPU.
 */
export function aggregate3Results(answer: string): Array<{ success: boolean; returnData: Hex }> | null {
  const hex = answer.slice(2);
  // a 32-byte word at a byte offset, as a number: offsets, lengths and booleans are small
  const word = (at: number) => (at * 2 + 64 <= hex.length ? parseInt(hex.slice(at * 2, at * 2 + 64), 16) : NaN);
  const array = word(0);
  const count = word(array);
  if (!Number.isSafeInteger(count)) return null;
  const results: Array<{ success: boolean; returnData: Hex }> = [];
  for (let i = 0; i < count; i++) {
    const tuple = array + 32 + word(array + 32 + i * 32);
    const bytes = tuple + word(tuple + 32);
    const length = word(bytes);
    const end = (bytes + 32 + length) * 2;
    if (!Number.isSafeInteger(end) || end > hex.length) return null;
    results.push({ success: word(tuple) === 1, returnData: `0x${hex.slice((bytes + 32) * 2, end)}` });
  }
  return results;
}

const utf8 = new TextDecoder();

/**
 * The name in reverseWithGateways' answer (string name, address, address), read by its layout;
 * viem's decoder for anything else. Through the decoder (which also checksums both addresses it
 * throws away) it was about 15 us a name.
 */
export function reverseName(returnData: Hex): string {
  const hex = returnData.slice(2);
  const at = parseInt(hex.slice(0, 64), 16) * 2;
  const length = parseInt(hex.slice(at, at + 64), 16) * 2;
  if (hex.length >= 192 && at >= 192 && at + 64 + length <= hex.length) {
    const bytes = new Uint8Array(length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(at + 64 + i * 2, at + 66 + i * 2), 16);
    return utf8.decode(bytes);
  }
  return decodeFunctionResult({ abi: reverseAbi, functionName: "reverseWithGateways", data: returnData })[0];
}

function classify(err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const cause = err instanceof BaseError ? err.walk((e) => e instanceof HttpRequestError) : undefined;
  if (cause instanceof HttpRequestError && cause.status !== undefined) {
    const retryAfter = Number(cause.headers?.get("retry-after"));
    return new UpstreamError(`the Ethereum RPC answered HTTP ${cause.status}`, {
      retryable: cause.status === 429 || cause.status >= 500,
      retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : undefined,
    });
  }
  return new UpstreamError(`the Ethereum RPC call failed: ${(err as Error)?.name ?? "error"}`, { retryable: true });
}
