// Wire shapes of wallet records and of a caller's limits: absent fields are omitted, timestamps ISO UTC.
import type { WalletView } from "../index/records.ts";
import type { Metered } from "./meter.ts";

export { walletRecordJson } from "../index/record-json.ts";
import { identityJson } from "../index/record-json.ts";

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
