// What MCP tools return: trimmed wallet records (docs/mcp.md), the quota every tool
// result carries, and their valibot schemas (the tools' output schemas).
import * as v from "valibot";
import type { WalletView } from "../index/records.ts";
import type { Metered } from "../http/meter.ts";
import { rateLimitsJson } from "../http/render.ts";

const ATTESTED_CLASSES = new Set(["onchain", "farcaster", "attested-social", "manual"]);

/**
 * true when the evidence classes include an owner-attested one (onchain, farcaster,
 * attested-social, manual), false for correlation (`aggregated`) alone, null with no class.
 */
export function attestedOf(sources: string[]): boolean | null {
  if (sources.some((s) => ATTESTED_CLASSES.has(s))) return true;
  return sources.length > 0 ? false : null;
}

/** The record an agent gets: identities, how they are backed, whether the handle reaches anyone. */
export function trimmedRecord(wallet: string, view: WalletView | undefined, options: { hideFollowers?: boolean } = {}) {
  if (!view || !view.found) return { wallet, found: false, previously_checked: view !== undefined };
  const t = view.twitter;
  const f = view.farcaster;
  return {
    wallet,
    found: true,
    attested: attestedOf(view.sources),
    ...(view.ensName !== undefined ? { ens_name: view.ensName } : {}),
    ...(t
      ? {
          x: { handle: t.handle, verified: t.verified, ...(t.selfDeclared ? { self_declared: true } : {}) },
          reaches_someone: t.reachability ? t.reachability.reachable : null,
          reachability: t.reachability?.value ?? "unchecked",
        }
      : {}),
    ...(f
      ? {
          farcaster: {
            username: f.username,
            fid: f.fid,
            verified: f.verified,
            ...(f.followers !== undefined && !options.hideFollowers ? { followers: f.followers } : {}),
          },
        }
      : {}),
    ...(view.lens !== undefined ? { lens: view.lens } : {}),
    ...(view.github !== undefined ? { github: view.github } : {}),
    sources: view.sources,
    stale: view.stale,
    previously_checked: true,
  };
}

/** The balance before this call's debit and the three rate windows after it. */
export function quotaOf(m: Metered) {
  return { credits_available: m.unmetered ? null : m.available, unmetered: m.unmetered, rate_limits: rateLimitsJson(m) };
}

const Window = v.nullable(
  v.object({
    limit: v.union([v.number(), v.literal("unlimited")]),
    remaining: v.union([v.number(), v.literal("unlimited")]),
    reset_at: v.string(),
  }),
);

export const Quota = v.pipe(
  v.object({
    credits_available: v.pipe(
      v.nullable(v.number()),
      v.description("Match credits available before this call's debit; null when the account is not metered"),
    ),
    unmetered: v.boolean(),
    rate_limits: v.object({ minute: Window, day: Window, month: Window }),
  }),
  v.description("The key's balance and rate windows"),
);

export const BilledMatches = v.pipe(
  v.number(),
  v.description("Match credits this call debited: wallets that resolved to an X (twitter) or farcaster identity"),
);

export const TrimmedRecord = v.object({
  wallet: v.string(),
  found: v.pipe(v.boolean(), v.description("false: nothing attached to the wallet (not billed)")),
  previously_checked: v.pipe(
    v.boolean(),
    v.description("The index has examined this wallet before (false only for a wallet never seen)"),
  ),
  attested: v.optional(
    v.pipe(
      v.nullable(v.boolean()),
      v.description(
        "true: owner-attested evidence (onchain, farcaster verification, attested sign-in, manual review); false: correlation alone; null: no classified evidence",
      ),
    ),
  ),
  ens_name: v.optional(v.string()),
  x: v.optional(
    v.object({
      handle: v.string(),
      verified: v.boolean(),
      self_declared: v.optional(v.pipe(v.literal(true), v.description("Only the owner's own text record names this handle"))),
    }),
  ),
  reaches_someone: v.optional(
    v.pipe(v.nullable(v.boolean()), v.description("Whether the X handle still reaches a live account; null until checked")),
  ),
  reachability: v.optional(v.picklist(["live", "suspended", "deactivated", "unchecked"])),
  farcaster: v.optional(
    v.object({ username: v.string(), fid: v.number(), verified: v.boolean(), followers: v.optional(v.number()) }),
  ),
  lens: v.optional(v.string()),
  github: v.optional(v.string()),
  sources: v.optional(v.array(v.string())),
  stale: v.optional(v.pipe(v.boolean(), v.description("The newest observation is older than the freshness window"))),
});
