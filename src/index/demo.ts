// The demo index: a dozen hand-written wallets the README's "Try it" walks through, and 10,000 generated
// ones covering every identity kind, route, reachability and freshness. Seeded, so every run
// (and every machine) loads the same index relative to its `now`.
import type { Db } from "../db/types.ts";
import { sql } from "../db/queries.ts";
import { writePrivateFile } from "../db/datadir-lock.ts";
import { createAccount, grantCredits } from "../ledger/accounts.ts";
import { createApiKey } from "../ledger/keys.ts";
import { importObservations } from "./import.ts";

export const DEMO_EMAIL = "demo@walletid.local";
export const DEMO_KEY_FILE = "demo-api-key";
const GENERATED_WALLETS = 10_000;
const SEED = 20_250_101;
// a route no allowlist entry classifies: its identities show, with no evidence class
export const UNCLASSIFIED_ROUTE = "scraper-legacy";

export const DEMO_EXAMPLES = {
  attested: {
    address: "0x1111111111111111111111111111111111111111",
    description: "twitter alice_onchain signed in (attested-social, live), farcaster alice, ens alice.eth, github",
  },
  selfDeclared: {
    address: "0x2222222222222222222222222222222222222222",
    description: "twitter bob_says_hi only from the owner's own ENS text record (self_declared), ens bob.eth",
  },
  twoHandles: {
    address: "0x3333333333333333333333333333333333333333",
    description: "two attested twitter handles, carol_main and carol_alt, both live (twitter.also)",
  },
  correctedHandle: {
    address: "0x4444444444444444444444444444444444444444",
    description: "first handle dave_old suspended, second attested handle dave_new live: the record shows dave_new",
  },
  aggregatedOnly: {
    address: "0x5555555555555555555555555555555555555555",
    description: "twitter maybe_erin from correlation only (aggregated, never presented as attestation)",
  },
  ensOnly: {
    address: "0x6666666666666666666666666666666666666666",
    description: "ens frank.eth only: found, but no twitter or farcaster, so not billed",
  },
  stale: {
    address: "0x7777777777777777777777777777777777777777",
    description: "twitter grace_stale and farcaster grace, last observed 90 days ago (stale)",
  },
  checkedEmpty: {
    address: "0x8888888888888888888888888888888888888888",
    description: "checked 3 days ago, nothing attached",
  },
  agent: {
    address: "0x9999999999999999999999999999999999999999",
    description: "an onchain agent (Heidi Bot, eliza) with no owner-attested identity: agent shown",
  },
  agentWithOwner: {
    address: "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    description: "an onchain agent whose owner signed in as twitter ivan_human: agent withheld",
  },
  unclassifiedRoute: {
    address: "0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
    description: "twitter judy_scraped from the unlisted route scraper-legacy: no evidence class",
  },
  unchecked: {
    address: "0xcccccccccccccccccccccccccccccccccccccccc",
    description: "twitter ken_unchecked signed in, reachability not checked yet",
  },
  farcasterOnly: {
    address: "0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee",
    description: "farcaster leo (fid 7012, 15,400 followers) only",
  },
  neverSeen: {
    address: "0xdddddddddddddddddddddddddddddddddddddddd",
    description: "never seen by the index (data null)",
  },
} as const satisfies Record<string, { address: string; description: string }>;

/** mulberry32: small, fast and good enough to shuffle demo data; never Math.random. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const DAY_MS = 86_400_000;

type Line = Record<string, unknown>;

function exampleLines(at: (daysAgo: number) => string): Line[] {
  const x = DEMO_EXAMPLES;
  const live = (handle: string, daysAgo = 1): Line => ({
    kind: "reachability",
    handle,
    reachability: "live",
    checked_at: at(daysAgo),
  });
  return [
    { wallet: x.attested.address, kind: "twitter", route: "x-signin", handle: "alice_onchain", observed_at: at(4) },
    { wallet: x.attested.address, kind: "farcaster", route: "farcaster-verification", fid: 7001, username: "alice", followers: 5400, observed_at: at(4) },
    { wallet: x.attested.address, kind: "ens", route: "ens-primary", name: "alice.eth", observed_at: at(4) },
    { wallet: x.attested.address, kind: "github", route: "github-signin", username: "alice-builds", observed_at: at(6) },
    live("alice_onchain"),

    { wallet: x.selfDeclared.address, kind: "twitter", route: "ens-text", handle: "bob_says_hi", self_declared: true, observed_at: at(2) },
    { wallet: x.selfDeclared.address, kind: "ens", route: "ens-primary", name: "bob.eth", observed_at: at(2) },
    live("bob_says_hi"),

    { wallet: x.twoHandles.address, kind: "twitter", route: "x-signin", handle: "carol_main", observed_at: at(3) },
    { wallet: x.twoHandles.address, kind: "twitter", route: "farcaster-x-verified", handle: "carol_alt", observed_at: at(8) },
    { wallet: x.twoHandles.address, kind: "farcaster", route: "farcaster-verification", fid: 7003, username: "carol", followers: 880, observed_at: at(8) },
    live("carol_main"),
    live("carol_alt"),

    { wallet: x.correctedHandle.address, kind: "twitter", route: "x-signin", handle: "dave_old", observed_at: at(20) },
    { wallet: x.correctedHandle.address, kind: "twitter", route: "manual-review", handle: "dave_new", observed_at: at(10) },
    { kind: "reachability", handle: "dave_old", reachability: "suspended", checked_at: at(1) },
    live("dave_new"),

    { wallet: x.aggregatedOnly.address, kind: "twitter", route: "correlation", handle: "maybe_erin", observed_at: at(5) },
    live("maybe_erin"),

    { wallet: x.ensOnly.address, kind: "ens", route: "ens-primary", name: "frank.eth", observed_at: at(7) },

    { wallet: x.stale.address, kind: "twitter", route: "x-signin", handle: "grace_stale", observed_at: at(90) },
    { wallet: x.stale.address, kind: "farcaster", route: "farcaster-verification", fid: 7007, username: "grace", followers: 120, observed_at: at(90) },
    live("grace_stale", 2),

    { wallet: x.checkedEmpty.address, kind: "empty", route: "farcaster-verification", observed_at: at(3) },

    {
      wallet: x.agent.address,
      kind: "agent",
      route: "agent-registry",
      is_agent: true,
      name: "Heidi Bot",
      framework: "eliza",
      type: "trading",
      token_symbol: "HEIDI",
      verified: true,
      observed_at: at(6),
    },

    { wallet: x.agentWithOwner.address, kind: "agent", route: "agent-registry", is_agent: true, name: "Ivan Agent", framework: "virtuals", observed_at: at(9) },
    { wallet: x.agentWithOwner.address, kind: "twitter", route: "x-signin", handle: "ivan_human", observed_at: at(9) },
    live("ivan_human"),

    { wallet: x.unclassifiedRoute.address, kind: "twitter", route: UNCLASSIFIED_ROUTE, handle: "judy_scraped", observed_at: at(12) },
    live("judy_scraped"),

    { wallet: x.unchecked.address, kind: "twitter", route: "x-signin", handle: "ken_unchecked", observed_at: at(1) },

    { wallet: x.farcasterOnly.address, kind: "farcaster", route: "farcaster-verification", fid: 7012, username: "leo", followers: 15400, observed_at: at(11) },
  ];
}

/** Wallets sharing one handle, so a reverse lookup has pages to walk. */
export const DEMO_CLUB = { handle: "based_club", wallets: 150 };

function clubLines(at: (daysAgo: number) => string): Line[] {
  const lines: Line[] = [];
  for (let k = 1; k <= DEMO_CLUB.wallets; k++) {
    const wallet = `0xc1ab${k.toString(16).padStart(36, "0")}`;
    const route = k % 4 === 0 ? "correlation" : "x-signin";
    lines.push({ wallet, kind: "twitter", route, handle: DEMO_CLUB.handle, observed_at: at(k % 9) });
    if (k % 3 !== 0) {
      const followers = (k * 37) % 500;
      lines.push({ wallet, kind: "farcaster", route: "farcaster-verification", fid: 9000 + k, username: `clubber${k}`, followers, observed_at: at(k % 9) });
    }
  }
  return lines;
}

const WORDS = [
  "based", "degen", "onchain", "mint", "block", "chain", "gm", "wagmi", "zk", "layer", "defi", "pixel",
  "frame", "cast", "yield", "stake", "vault", "node", "hash", "moon", "ape", "punk", "solar", "quiet",
  "rapid", "lucky", "fren", "builder", "anon", "satoshi", "gas", "merkle", "rollup", "bridge", "oracle", "relay",
];
const FRAMEWORKS = ["eliza", "virtuals", "langchain", "autogen", "custom"];
const AGENT_TYPES = ["trading", "social", "research", "assistant", "game"];

interface Weighted<T> {
  value: T;
  weight: number;
}

function generatedLines(count: number, at: (daysAgo: number) => string): Line[] {
  const random = seededRandom(SEED);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const weighted = <T>(items: Weighted<T>[]): T => {
    let r = random() * items.reduce((sum, i) => sum + i.weight, 0);
    for (const item of items) if ((r -= item.weight) < 0) return item.value;
    return items[items.length - 1].value;
  };
  const chance = (p: number) => random() < p;
  const name = (i: number, max: number, joiner = "") =>
    `${pick(WORDS)}${joiner}${pick(WORDS)}`.slice(0, max - 4) + i.toString(36);

  const lines: Line[] = [];
  const reach = (handle: string, value?: string) => {
    const reachability =
      value ??
      weighted([
        { value: "live", weight: 78 },
        { value: "suspended", weight: 4 },
        { value: "deactivated", weight: 3 },
        { value: "unchecked", weight: 2 },
        { value: "", weight: 13 }, // never checked: no line at all
      ]);
    if (reachability) lines.push({ kind: "reachability", handle, reachability, checked_at: at(random() * 6) });
  };
  const farcasterAccounts: { fid: number; username: string; followers?: number }[] = [];
  const seen = new Set<string>(Object.values(DEMO_EXAMPLES).map((e) => e.address));

  for (let i = 0; i < count; i++) {
    let wallet: string;
    do {
      wallet = "0x" + Array.from({ length: 40 }, () => Math.floor(random() * 16).toString(16)).join("");
    } while (seen.has(wallet));
    seen.add(wallet);
    // 80% fresh; the rest stale, many of them exactly 90 days old
    const age = chance(0.8) ? random() * 25 : chance(0.5) ? 90 : 35 + random() * 300;
    const observed = (extra = 0) => at(age + extra);

    if (chance(0.07)) {
      lines.push({ wallet, kind: "empty", route: pick(["farcaster-verification", "ens-primary", "correlation"]), observed_at: observed() });
      continue;
    }

    let farcaster: (typeof farcasterAccounts)[number] | undefined;
    if (chance(0.45)) {
      // a farcaster user verifies several wallets now and then
      if (farcasterAccounts.length > 0 && chance(0.03)) farcaster = pick(farcasterAccounts);
      else {
        farcaster = { fid: 20_000 + i * 7 + Math.floor(random() * 7), username: name(i, 16) };
        if (chance(0.9)) farcaster.followers = Math.floor(Math.exp(random() * Math.log(250_000))) - 1;
        farcasterAccounts.push(farcaster);
      }
      lines.push({ wallet, kind: "farcaster", route: "farcaster-verification", ...farcaster, observed_at: observed(random()) });
    }

    let identities = farcaster ? 1 : 0;
    const shape = weighted([
      { value: "one", weight: 55 },
      { value: "none", weight: 42 },
      { value: "two-live", weight: 2 },
      { value: "corrected", weight: 1 },
    ]);
    if (shape === "one") {
      const handle = name(i, 15, chance(0.3) ? "_" : "");
      const route = weighted([
        { value: "x-signin", weight: 38 },
        { value: farcaster ? "farcaster-x-verified" : "x-signin", weight: 20 },
        { value: "correlation", weight: 15 },
        { value: "ens-text", weight: 10 },
        { value: "manual-review", weight: 5 },
        { value: UNCLASSIFIED_ROUTE, weight: 5 },
        { value: "x-signin+correlation", weight: 7 },
      ]);
      for (const r of route.split("+")) {
        const line: Line = { wallet, kind: "twitter", route: r, handle, observed_at: observed(random() * 3) };
        // the ens-text route marks self-declaration by itself; half the lines also say so
        if (r === "ens-text" && chance(0.5)) line.self_declared = true;
        lines.push(line);
      }
      reach(handle);
      identities++;
    } else if (shape === "two-live" || shape === "corrected") {
      const first = name(i, 15, "_");
      const second = `alt_${i.toString(36)}_${pick(WORDS)}`.slice(0, 15);
      lines.push({ wallet, kind: "twitter", route: "x-signin", handle: first, observed_at: observed(20) });
      lines.push({ wallet, kind: "twitter", route: pick(["manual-review", "x-signin"]), handle: second, observed_at: observed() });
      reach(first, shape === "two-live" ? "live" : pick(["suspended", "deactivated"]));
      reach(second, "live");
      identities++;
    }

    if (chance(0.35)) {
      lines.push({ wallet, kind: "ens", route: "ens-primary", name: `${name(i, 20)}.eth`, observed_at: observed(random()) });
      identities++;
    }
    if (chance(0.1)) {
      lines.push({ wallet, kind: "lens", route: "lens-profile", handle: `${name(i, 20)}.lens`, observed_at: observed(random()) });
      identities++;
    }
    if (chance(0.07)) {
      lines.push({ wallet, kind: "github", route: "github-signin", username: name(i, 20, "-"), observed_at: observed(random()) });
      identities++;
    }
    if (chance(0.02)) {
      const agent: Line = { wallet, kind: "agent", route: "agent-registry", is_agent: true, observed_at: observed() };
      agent.name = `${pick(WORDS)} agent ${i}`;
      if (chance(0.8)) agent.framework = pick(FRAMEWORKS);
      if (chance(0.8)) agent.type = pick(AGENT_TYPES);
      if (chance(0.5)) agent.token_symbol = pick(WORDS).toUpperCase().slice(0, 5);
      agent.verified = chance(0.6);
      lines.push(agent);
      identities++;
    }
    // a wallet in the index with no identity would be an `empty` line; give it an ENS name instead
    if (identities === 0) lines.push({ wallet, kind: "ens", route: "ens-primary", name: `${name(i, 20)}.eth`, observed_at: observed() });
  }
  return lines;
}

/** The demo index as NDJSON lines, with times relative to `now`. */
export function demoObservationLines(options: { now: Date; wallets?: number }): string[] {
  const now = options.now.getTime();
  const at = (daysAgo: number) => new Date(Math.round(now - daysAgo * DAY_MS)).toISOString();
  const lines = [...exampleLines(at), ...clubLines(at), ...generatedLines(options.wallets ?? GENERATED_WALLETS, at)];
  return lines.map((line) => JSON.stringify(line));
}

/** Imports the demo index; returns how many wallets the index holds afterwards. */
export async function loadDemoIndex(db: Db, options: { now: Date }): Promise<{ wallets: number }> {
  await importObservations(db, demoObservationLines({ now: options.now }), { now: options.now });
  const [row] = await db.query<{ wallets: number }>(sql("wallets_count"));
  return { wallets: row.wallets };
}

/** A transaction's handle that joins it when asked for a nested one, so helpers that open their own run inside it. */
function joining(tx: Db): Db {
  return { ...tx, transaction: (fn) => fn(tx) };
}

/**
 * On an empty index: loads the demo index and creates the demo account (demo@walletid.local,
 * one Scale pack) and its key "demo", all in one transaction; the key is also written to
 * `${dataDir}/demo-api-key` when dataDir is given. On an index with wallets: does nothing.
 */
export async function ensureDemo(
  db: Db,
  options: { now: Date; dataDir?: string },
): Promise<{ created: boolean; apiKey?: string; accountId?: string }> {
  const result = await db.transaction(async (tx) => {
    // two servers starting at once on one empty PostgreSQL: the second waits, then finds the index loaded
    await tx.query("SELECT pg_advisory_xact_lock(7201002)");
    const [count] = await tx.query<{ wallets: number }>(sql("wallets_count"));
    if (count.wallets > 0) return { created: false } as const;
    const inside = joining(tx);
    await loadDemoIndex(inside, { now: options.now });
    const { accountId } = await createAccount(inside, { email: DEMO_EMAIL, now: options.now });
    await grantCredits(inside, { accountId, pack: "Scale", quantity: 1, grantKey: "demo-scale", now: options.now });
    const key = await createApiKey(inside, { accountId, name: "demo", now: options.now });
    if (!key.ok) throw new Error(`Cannot create the demo API key: ${key.code}`);
    return { created: true, apiKey: key.apiKey, accountId } as const;
  }, { bulk: true });
  if (result.created && options.dataDir !== undefined) {
    writePrivateFile(options.dataDir, DEMO_KEY_FILE, `${result.apiKey}\n`);
  }
  return result;
}
