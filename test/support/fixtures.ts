// A small hand-written index covering every record rule, imported through the real import path.
import type { Db } from "../../src/db/types.ts";
import { importObservations } from "../../src/index/import.ts";

const addr = (c: string) => `0x${c.repeat(40)}`;

export const W = {
  full: addr("a"),
  selfDeclared: addr("b"),
  twoHandles: addr("c"),
  corrected: addr("d"),
  ensOnly: addr("e"),
  aggregated: addr("f"),
  stale: `0x${"1".repeat(39)}9`,
  empty: `0x${"2".repeat(40)}`,
  neverSeen: `0x${"3".repeat(40)}`,
  agent: `0x${"4".repeat(40)}`,
  agentWithHuman: `0x${"5".repeat(40)}`,
  unclassified: `0x${"6".repeat(40)}`,
  farcasterOnly: `0x${"7".repeat(40)}`,
};

/** Observation lines relative to `now`: fresh ones a day old, the stale one 90 days old. */
export function fixtureLines(now: Date): string[] {
  const day = (n: number) => new Date(now.getTime() - n * 86_400_000).toISOString();
  const o = (x: Record<string, unknown>) => JSON.stringify({ observed_at: day(1), ...x });
  return [
    o({ wallet: W.full.toUpperCase().replace("0X", "0x"), kind: "twitter", route: "x-signin", handle: "Alice" }),
    o({ wallet: W.full, kind: "farcaster", route: "farcaster-verification", fid: 3, username: "alice", followers: 100 }),
    o({ wallet: W.full, kind: "ens", route: "ens-primary", name: "alice.eth" }),
    JSON.stringify({ kind: "reachability", handle: "alice", reachability: "live", checked_at: day(2) }),

    o({ wallet: W.selfDeclared, kind: "twitter", route: "ens-text", handle: "bob" }),

    o({ wallet: W.twoHandles, kind: "twitter", route: "x-signin", handle: "carol" }),
    o({ wallet: W.twoHandles, kind: "twitter", route: "manual-review", handle: "carol_alt", observed_at: day(3) }),
    JSON.stringify({ kind: "reachability", handle: "carol", reachability: "live", checked_at: day(2) }),
    JSON.stringify({ kind: "reachability", handle: "carol_alt", reachability: "live", checked_at: day(2) }),

    o({ wallet: W.corrected, kind: "twitter", route: "x-signin", handle: "dave_old" }),
    o({ wallet: W.corrected, kind: "twitter", route: "x-signin", handle: "dave_new", observed_at: day(5) }),
    JSON.stringify({ kind: "reachability", handle: "dave_old", reachability: "suspended", checked_at: day(2) }),
    JSON.stringify({ kind: "reachability", handle: "dave_new", reachability: "live", checked_at: day(2) }),

    o({ wallet: W.ensOnly, kind: "ens", route: "ens-primary", name: "eve.eth" }),
    o({ wallet: W.ensOnly, kind: "lens", route: "lens-profile", handle: "eve.lens" }),
    o({ wallet: W.ensOnly, kind: "github", route: "github-signin", username: "eve" }),

    o({ wallet: W.aggregated, kind: "twitter", route: "correlation", handle: "frank" }),

    o({ wallet: W.stale, kind: "twitter", route: "x-signin", handle: "gina", observed_at: day(90) }),

    o({ wallet: W.empty, kind: "empty", route: "x-signin", observed_at: day(4) }),

    o({ wallet: W.agent, kind: "agent", route: "agent-registry", is_agent: true, name: "TradeBot", framework: "eliza", type: "trading", token_symbol: "TBOT", verified: true }),

    o({ wallet: W.agentWithHuman, kind: "agent", route: "agent-registry", is_agent: true, name: "KBot", framework: "eliza" }),
    o({ wallet: W.agentWithHuman, kind: "twitter", route: "x-signin", handle: "kate_human" }),

    o({ wallet: W.unclassified, kind: "twitter", route: "scraper-legacy", handle: "leo" }),

    o({ wallet: W.farcasterOnly, kind: "farcaster", route: "farcaster-verification", fid: 77, username: "mia", followers: 5 }),
  ];
}

export async function loadFixtures(db: Db, now: Date): Promise<void> {
  await importObservations(db, fixtureLines(now), { now });
}
