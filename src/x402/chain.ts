// Looking at the chain for a purchase whose claimer died: whether the USDC contract has used the
// payer's EIP-3009 nonce (authorizationState), read over X402_RPC_URL (Base JSON-RPC) with a timeout.
import { createPublicClient, http, parseAbi, type Hex } from "viem";
import type { ReplayKey } from "./payment.ts";

const EIP3009 = parseAbi(["function authorizationState(address authorizer, bytes32 nonce) view returns (bool)"]);

/** True when the token has used the authorization's nonce; throws when the chain cannot be read. */
export type AuthorizationUsed = (key: ReplayKey) => Promise<boolean>;

export function authorizationReader(options: { rpcUrl: string; timeoutMs: number }): AuthorizationUsed {
  const client = createPublicClient({ transport: http(options.rpcUrl, { retryCount: 0, timeout: options.timeoutMs }) });
  return async (key) =>
    await client.readContract({ address: key.asset as Hex, abi: EIP3009, functionName: "authorizationState", args: [key.payer as Hex, key.nonce as Hex] });
}
