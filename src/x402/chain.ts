// Looking at the chain for a purchase whose claimer died, over X402_RPC_URL (Base JSON-RPC) with a
// timeout: whether the payer's EIP-3009 authorization moved the money. A spent nonce alone does not
// say so (authorizationState is true for a canceled authorization too): the transfer is proven by
// the token's AuthorizationUsed(authorizer, nonce) event, which FiatToken emits only when
// transferWithAuthorization executes, in the same transaction as the Transfer the payer signed.
import { createPublicClient, http, parseAbi, parseAbiItem, type Hex } from "viem";
import type { ReplayKey } from "./payment.ts";

const EIP3009 = parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]);
const AUTHORIZATION_USED = parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)");

/** How far back the AuthorizationUsed event is looked for: about 28 hours of Base blocks (2 s each). */
export const LOOKBACK_BLOCKS = 50_000n;

/**
 * true: the authorization was used by a transfer (its AuthorizationUsed event is on chain);
 * false: its nonce is unused, so nothing moved; undefined: the nonce is spent but no transfer with
 * it is found (canceled by its signer, or older than LOOKBACK_BLOCKS), so nothing may be granted
 * on the chain's word. Throws when the chain cannot be read.
 */
export type AuthorizationUsed = (key: ReplayKey) => Promise<boolean | undefined>;

export function authorizationReader(options: { rpcUrl: string; timeoutMs: number }): AuthorizationUsed {
  const client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0, timeout: options.timeoutMs }) });
  return async (key) => {
    const asset = key.asset as Hex;
    const spent = await client.readContract({ address: asset, abi: EIP3009, functionName: "authorizationState", args: [key.payer as Hex, key.nonce as Hex] });
    if (!spent) return false;
    const latest = await client.getBlockNumber({ cacheTime: 0 });
    const used = await client.getLogs({
      address: asset,
      event: AUTHORIZATION_USED,
      args: { authorizer: key.payer as Hex, nonce: key.nonce as Hex },
      fromBlock: latest > LOOKBACK_BLOCKS ? latest - LOOKBACK_BLOCKS : 0n,
      toBlock: latest,
    });
    return used.length > 0 ? true : undefined;
  };
}
