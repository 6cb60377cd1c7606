// Primary ENS names by reverse resolution: viem's getEnsName against ETH_RPC_URL (the
// Universal Resolver's reverseWithGateways through eth_call). Concurrent lookups go out as
// JSON-RPC batches; retries are the job's, not viem's.
import { BaseError, createPublicClient, http, HttpRequestError, type Address } from "viem";
import { getEnsName } from "viem/ens";
import { UpstreamError, type LiveSource, type ObservationFields } from "./types.ts";

/**
 * The ENS Universal Resolver on Ethereum mainnet (viem's `mainnet.contracts.ensUniversalResolver`),
 * named here so the worker does not load viem's table of every chain (about 55 MB resident).
 */
export const ENS_UNIVERSAL_RESOLVER = "0xeeeeeeee14d718c2b47d9923deab1335e144eeee";

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
  return {
    name: "ens",
    stage: "onchain",
    batchSize: 500,
    async resolve(addresses) {
      const names = await Promise.all(
        addresses.map((address) =>
          getEnsName(client, { address: address as Address, universalResolverAddress: ENS_UNIVERSAL_RESOLVER }).catch((err: unknown) => {
            throw classify(err);
          }),
        ),
      );
      const out = new Map<string, ObservationFields[]>();
      names.forEach((name, i) => {
        if (name) out.set(addresses[i], [{ kind: "ens", route: "ens-primary", name }]);
      });
      return out;
    },
  };
}

function classify(err: unknown): UpstreamError {
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
