// Wire shapes of wallet records: absent fields are omitted, timestamps ISO UTC.
import type { TwitterView, WalletView } from "../index/records.ts";

function twitterJson(t: TwitterView, options: { verified: boolean }) {
  return {
    handle: t.handle,
    url: t.url,
    ...(options.verified ? { verified: t.verified } : {}),
    ...(t.selfDeclared ? { self_declared: true } : {}),
    ...(t.reachability
      ? {
          reachable: t.reachability.reachable,
          reachability: t.reachability.value,
          reachability_checked_at: t.reachability.checkedAt.toISOString(),
        }
      : {}),
    ...(t.also ? { also: t.also } : {}),
  };
}

function identityJson(v: WalletView) {
  return {
    wallet: v.wallet,
    ...(v.ensName !== undefined ? { ens_name: v.ensName } : {}),
    ...(v.twitter ? { twitter: twitterJson(v.twitter, { verified: true }) } : {}),
    ...(v.farcaster
      ? {
          farcaster: {
            username: v.farcaster.username,
            url: v.farcaster.url,
            ...(v.farcaster.followers !== undefined ? { followers: v.farcaster.followers } : {}),
            fid: v.farcaster.fid,
            verified: v.farcaster.verified,
          },
        }
      : {}),
    ...(v.lens !== undefined ? { lens: v.lens } : {}),
    ...(v.github !== undefined ? { github: v.github } : {}),
    ...(v.sources.length > 0 ? { sources: v.sources } : {}),
  };
}

/** The single-lookup record: identities, agent and quality. */
export function walletRecordJson(v: WalletView) {
  return {
    ...identityJson(v),
    ...(v.agent ? { agent: v.agent } : {}),
    quality: {
      score: v.quality.score,
      ...(v.quality.lastVerified ? { last_verified: v.quality.lastVerified.toISOString() } : {}),
    },
  };
}

/** A batch row: identities only, no quality and no per-row freshness. */
export function batchRowJson(v: WalletView) {
  return identityJson(v);
}

/** A reverse-lookup row: identities and the quality score as a flat number. */
export function reverseRowJson(v: WalletView) {
  return { ...identityJson(v), quality_score: v.quality.score };
}
