// Wire shapes of wallet records and of a caller's limits: absent fields are omitted, timestamps ISO UTC.
import type { TwitterView, WalletView } from "../index/records.ts";
import type { Metered } from "./meter.ts";

// Built field by field rather than with conditional spreads: a reverse page renders 100 records
// and each spread allocated and copied an object; the fields keep the same order.

function twitterJson(t: TwitterView, options: { verified: boolean }) {
  const out: Record<string, unknown> = { handle: t.handle, url: t.url };
  if (options.verified) out.verified = t.verified;
  if (t.selfDeclared) out.self_declared = true;
  if (t.reachability) {
    out.reachable = t.reachability.reachable;
    out.reachability = t.reachability.value;
    out.reachability_checked_at = t.reachability.checkedAt.toISOString();
  }
  if (t.also) out.also = t.also;
  return out;
}

function identityJson(v: WalletView): Record<string, unknown> {
  const out: Record<string, unknown> = { wallet: v.wallet };
  if (v.ensName !== undefined) out.ens_name = v.ensName;
  if (v.twitter) out.twitter = twitterJson(v.twitter, { verified: true });
  if (v.farcaster) {
    const farcaster: Record<string, unknown> = { username: v.farcaster.username, url: v.farcaster.url };
    if (v.farcaster.followers !== undefined) farcaster.followers = v.farcaster.followers;
    farcaster.fid = v.farcaster.fid;
    farcaster.verified = v.farcaster.verified;
    out.farcaster = farcaster;
  }
  if (v.lens !== undefined) out.lens = v.lens;
  if (v.github !== undefined) out.github = v.github;
  if (v.sources.length > 0) out.sources = v.sources;
  return out;
}

/** The single-lookup record: identities, agent and quality. */
export function walletRecordJson(v: WalletView) {
  const out = identityJson(v);
  if (v.agent) out.agent = v.agent;
  const quality: Record<string, unknown> = { score: v.quality.score };
  if (v.quality.lastVerified) quality.last_verified = v.quality.lastVerified.toISOString();
  out.quality = quality;
  return out;
}

/** A batch row: identities only, no quality and no per-row freshness. */
export function batchRowJson(v: WalletView) {
  return identityJson(v);
}

/** A reverse-lookup row: identities and the quality score as a flat number. */
export function reverseRowJson(v: WalletView) {
  const out = identityJson(v);
  out.quality_score = v.quality.score;
  return out;
}

/** A rate window as /usage shows it: null until the window has been exercised. */
export function windowJson(m: Metered, name: "minute" | "day" | "month") {
  const w = m.windows.find((x) => x.name === name)!;
  if (w.used === 0) return null;
  return {
    limit: w.limit ?? "unlimited",
    remaining: w.limit === null ? "unlimited" : Math.max(0, w.limit - w.used),
    reset_at: w.resetAt.toISOString(),
  };
}

export function rateLimitsJson(m: Metered) {
  return { minute: windowJson(m, "minute"), day: windowJson(m, "day"), month: windowJson(m, "month") };
}

export function planLimitsJson(m: Metered) {
  return {
    requests_per_minute: m.windows[0].limit ?? "unlimited",
    requests_per_day: m.windows[1].limit ?? "unlimited",
    requests_per_month: m.windows[2].limit ?? "unlimited",
    max_batch_size: m.maxBatchSize ?? "unlimited",
  };
}
