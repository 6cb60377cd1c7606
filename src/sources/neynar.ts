// Farcaster users by verified address through Neynar's v2 bulk-by-address endpoint
// (GET /v2/farcaster/user/bulk-by-address/, header x-api-key; wire format in
// shared/upstreams/neynar-openapi.yaml). Each user becomes a farcaster observation, and a
// verified X account on it a twitter one.
import { statusError, UpstreamError, type LiveSource, type ObservationFields } from "./types.ts";

export interface NeynarOptions {
  baseUrl: string;
  apiKey?: string;
  timeoutMs: number;
}

interface NeynarUser {
  fid?: unknown;
  username?: unknown;
  follower_count?: unknown;
  verified_addresses?: { eth_addresses?: unknown };
  verified_accounts?: Array<{ platform?: unknown; username?: unknown }> | null;
}

/** Neynar takes up to 350 addresses a request. */
export const NEYNAR_BATCH = 350;

export function neynarSource(options: NeynarOptions): LiveSource {
  const endpoint = `${options.baseUrl.replace(/\/+$/, "")}/v2/farcaster/user/bulk-by-address/`;
  return {
    name: "neynar",
    stage: "live",
    batchSize: NEYNAR_BATCH,
    async resolve(addresses) {
      const url = `${endpoint}?addresses=${addresses.join(",")}&address_types=verified_address`;
      let res: Response;
      try {
        res = await fetch(url, {
          headers: { accept: "application/json", ...(options.apiKey ? { "x-api-key": options.apiKey } : {}) },
          signal: AbortSignal.timeout(options.timeoutMs),
        });
      } catch (err) {
        throw new UpstreamError(`neynar is unreachable: ${(err as Error).name}`, { retryable: true });
      }
      const text = await res.text().catch(() => "");
      // Neynar answers 404 with an ErrorRes body when none of the addresses has a user
      if (res.status === 404 && isErrorRes(text)) return new Map();
      if (!res.ok) throw statusError("neynar", res);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new UpstreamError("neynar answered a body that is not JSON", { retryable: true });
      }
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw new UpstreamError("neynar answered a body that is not an object of users by address", { retryable: true });
      }
      return observationsByAddress(body as Record<string, unknown>, new Set(addresses));
    },
  };
}

function isErrorRes(text: string): boolean {
  try {
    const body = JSON.parse(text) as { message?: unknown };
    return typeof body.message === "string";
  } catch {
    return false;
  }
}

function observationsByAddress(body: Record<string, unknown>, asked: Set<string>): Map<string, ObservationFields[]> {
  const out = new Map<string, ObservationFields[]>();
  for (const [key, users] of Object.entries(body)) {
    const address = key.toLowerCase();
    if (!asked.has(address) || !Array.isArray(users)) continue;
    const found: ObservationFields[] = [];
    for (const user of users as NeynarUser[]) {
      const verified = Array.isArray(user.verified_addresses?.eth_addresses)
        ? (user.verified_addresses!.eth_addresses as unknown[]).map((a) => String(a).toLowerCase())
        : [];
      // only a verification binds the wallet to the account: a custody address alone does not
      if (!verified.includes(address) || typeof user.fid !== "number" || typeof user.username !== "string") continue;
      found.push({
        kind: "farcaster",
        route: "farcaster-verification",
        fid: user.fid,
        username: user.username,
        ...(typeof user.follower_count === "number" ? { followers: user.follower_count } : {}),
      });
      for (const account of user.verified_accounts ?? []) {
        if (account?.platform === "x" && typeof account.username === "string") {
          found.push({ kind: "twitter", route: "farcaster-x-verified", handle: account.username });
        }
      }
    }
    if (found.length > 0) out.set(address, found);
  }
  return out;
}
