// The wire shape of a wallet record, as a lookup answers it (also what a wallet.changed event
// carries): absent fields are omitted, timestamps ISO UTC. src/http/render.ts adds the other shapes.
import type { TwitterView, WalletView } from "./records.ts";

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

export function identityJson(v: WalletView): Record<string, unknown> {
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

