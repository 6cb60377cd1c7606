// The live sources the configuration turns on; an upstream left unset is off and says so.
import type { Log } from "../observe/log.ts";
import type { Config } from "../config.ts";
import { ensSource } from "./ens.ts";
import { neynarSource } from "./neynar.ts";
import type { LiveSource } from "./types.ts";

export function configuredSources(config: Config, log: Log): LiveSource[] {
  const { upstreams } = config;
  const timeoutMs = config.jobs.upstreamTimeoutMs;
  const sources: LiveSource[] = [];
  if (upstreams.neynarApiUrl) {
    sources.push(neynarSource({ baseUrl: upstreams.neynarApiUrl, apiKey: upstreams.neynarApiKey, timeoutMs }));
  } else {
    log("Farcaster live source is off (NEYNAR_API_URL unset): jobs skip the live stage");
  }
  if (upstreams.ethRpcUrl) {
    sources.push(ensSource({ rpcUrl: upstreams.ethRpcUrl, timeoutMs }));
  } else {
    log("ENS live source is off (ETH_RPC_URL unset): jobs skip the onchain stage");
  }
  return sources;
}
