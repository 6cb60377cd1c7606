// Index import (NDJSON observations) and the demo index, on PGlite and on PostgreSQL.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eachDatabase } from "./support/db.ts";
import type { Db } from "../src/db/types.ts";
import { importObservations } from "../src/index/import.ts";
import { parseObservation } from "../src/index/observations.ts";
import { DEMO_EXAMPLES, demoObservationLines, ensureDemo } from "../src/index/demo.ts";

const NOW = new Date("2025-06-01T00:00:00Z");
const DAY = 86_400_000;
const W1 = "0xAAAA00000000000000000000000000000000aaaa";
const w1 = W1.toLowerCase();
const w2 = "0xbbbb00000000000000000000000000000000bbbb";
const w3 = "0xcccc00000000000000000000000000000000cccc";
const w4 = "0xdddd00000000000000000000000000000000dddd";
const w5 = "0xeeee00000000000000000000000000000000eeee";

const FILE = [
  { wallet: W1, kind: "twitter", route: "x-signin", handle: "@Alice_X", observed_at: "2025-05-01T00:00:00Z" },
  { wallet: W1, kind: "twitter", route: "ens-text", handle: "alice_txt", self_declared: true, observed_at: "2025-05-02T00:00:00Z" },
  { wallet: W1, kind: "farcaster", route: "farcaster-verification", fid: 42, username: "Alice", followers: 10, observed_at: "2025-05-03T00:00:00Z" },
  { wallet: W1, kind: "ens", route: "ens-primary", name: "Alice.ETH", observed_at: "2025-05-04T02:00:00+02:00" },
  { wallet: w2, kind: "lens", route: "lens-profile", handle: "Bob.lens" },
  { wallet: w2, kind: "github", route: "github-signin", username: "Bob-Dev", observed_at: "2025-05-05T00:00:00Z" },
  { wallet: w3, kind: "agent", route: "agent-registry", is_agent: true, name: "Bot", framework: "eliza", observed_at: "2025-05-06T00:00:00Z" },
  { wallet: w4, kind: "empty", route: "correlation", observed_at: "2025-05-10T00:00:00Z" },
  { wallet: w5, kind: "twitter", route: "scraper-legacy", handle: "judy", observed_at: "2025-05-07T00:00:00Z" },
  { kind: "reachability", handle: "@ALICE_X", reachability: "live", checked_at: "2025-05-30T00:00:00Z" },
  { kind: "reachability", handle: "alice_txt", reachability: "suspended", checked_at: "2025-05-29T00:00:00Z" },
  null, // a blank line
  // an older observation of fid 42 from another wallet: its link is new, the account keeps the newer data
  { wallet: w5, kind: "farcaster", route: "farcaster-verification", fid: 42, username: "alice", observed_at: "2025-04-01T00:00:00Z" },
].map((line) => (line ? JSON.stringify(line) : ""));

async function dump(db: Db): Promise<Record<string, unknown>> {
  const tables = {
    wallets: "address",
    links: "wallet, kind, value, route",
    farcaster_accounts: "fid",
    twitter_reachability: "handle",
  };
  const out: Record<string, unknown> = {};
  for (const [table, order] of Object.entries(tables)) {
    // through JSON, so both drivers return the same plain values
    const [row] = await db.query<{ rows: unknown }>(
      `SELECT coalesce(json_agg(t ORDER BY ${order}), '[]') AS rows FROM ${table} t`,
    );
    out[table] = row.rows;
  }
  return out;
}

/** Rows as a plain array (postgres.js returns its own Array subclass). */
async function select(db: Db, query: string, params: unknown[] = []): Promise<Record<string, unknown>[]> {
  return [...(await db.query(query, params))];
}

async function count(db: Db, query: string, params: unknown[] = []): Promise<number> {
  const [row] = await db.query<{ n: number }>(`SELECT (${query})::integer AS n`, params);
  return row.n;
}

describe("parseObservation", () => {
  test("normalises case, a leading @ and omitted optional fields", () => {
    const twitter = parseObservation(FILE[0], 1);
    assert.deepEqual(twitter, {
      ok: true,
      observation: { kind: "twitter", wallet: w1, route: "x-signin", handle: "alice_x", selfDeclared: false, observedAt: new Date("2025-05-01T00:00:00Z") },
    });
    const farcaster = parseObservation(JSON.stringify({ wallet: w1, kind: "farcaster", route: "x", fid: 7, username: "Bo", followers: null }), 2);
    assert.deepEqual(farcaster, { ok: true, observation: { kind: "farcaster", wallet: w1, route: "x", fid: 7, username: "bo" } });
    const agent = parseObservation(JSON.stringify({ wallet: w1, kind: "agent", route: "agent-registry", verified: false, token_symbol: "TKN" }), 3);
    assert.deepEqual(agent, { ok: true, observation: { kind: "agent", wallet: w1, route: "agent-registry", agent: { verified: false, token_symbol: "TKN" } } });
  });

  test("a bad line gives one line naming it and the reason", () => {
    const base = { wallet: w1, kind: "twitter", route: "x-signin", handle: "alice" };
    const cases: [unknown, string][] = [
      ["{nope", "not valid JSON"],
      [[1, 2], "not a JSON object"],
      [{ ...base, kind: undefined }, "kind must be one of twitter, farcaster, ens, lens, github, agent, empty, reachability"],
      [{ ...base, kind: "myspace" }, "kind must be one of twitter, farcaster, ens, lens, github, agent, empty, reachability"],
      [{ ...base, wallet: "0x1234" }, 'wallet "0x1234" is not an address (0x and 40 hex digits)'],
      [{ ...base, wallet: undefined }, "wallet must be a non-empty string"],
      [{ ...base, route: undefined }, "route must be a non-empty string"],
      [{ ...base, route: "X Signin" }, 'route "X Signin" is not a route name ([a-z0-9._-], lowercase)'],
      [{ ...base, handle: "a_very_long_handle" }, 'handle "a_very_long_handle" is not a twitter handle (1 to 15 letters, digits or underscores)'],
      [{ ...base, handle: "al-ice" }, 'handle "al-ice" is not a twitter handle (1 to 15 letters, digits or underscores)'],
      [{ ...base, self_declared: "yes" }, "self_declared must be true or false"],
      [{ ...base, observedAt: "2025-01-01T00:00:00Z" }, 'unknown field "observedAt" for kind twitter'],
      [{ ...base, observed_at: "yesterday" }, "observed_at must be an ISO timestamp with a time zone, e.g. 2025-01-31T12:00:00Z"],
      [{ ...base, observed_at: "2025-05-01T00:00:00" }, "observed_at must be an ISO timestamp with a time zone, e.g. 2025-01-31T12:00:00Z"],
      [{ ...base, observed_at: "2025-02-30T00:00:00Z" }, 'observed_at "2025-02-30T00:00:00Z" is not a valid date and time'],
      [{ ...base, observed_at: "2025-06-02T00:00:00Z" }, "observed_at 2025-06-02T00:00:00Z is in the future"],
      [{ wallet: w1, kind: "farcaster", route: "x", fid: 0, username: "a" }, "fid must be a whole number from 1 to 9007199254740991"],
      [{ wallet: w1, kind: "farcaster", route: "x", fid: "42", username: "a" }, "fid must be a whole number from 1 to 9007199254740991"],
      [{ wallet: w1, kind: "farcaster", route: "x", fid: 4, username: "a", followers: -1 }, "followers must be a whole number from 0 to 2147483647"],
      [{ wallet: w1, kind: "farcaster", route: "x", fid: 4 }, "username must be a non-empty string"],
      [{ wallet: w1, kind: "ens", route: "ens-primary", name: "noname" }, 'name "noname" is not an ENS name'],
      [{ wallet: w1, kind: "github", route: "github-signin", username: "-bad" }, 'username "-bad" is not a github username'],
      [{ wallet: w1, kind: "agent", route: "agent-registry" }, "an agent line needs at least one of is_agent, name, framework, type, token_symbol, verified"],
      [{ wallet: w1, kind: "agent", route: "agent-registry", is_agent: "true" }, "is_agent must be true or false"],
      [{ wallet: w1, kind: "empty", route: "x", handle: "a" }, 'unknown field "handle" for kind empty'],
      [{ wallet: w1, kind: "reachability", handle: "a", reachability: "live", checked_at: "2025-05-01T00:00:00Z" }, "a reachability line has no wallet: reachability belongs to the handle"],
      [{ kind: "reachability", handle: "a", reachability: "banned", checked_at: "2025-05-01T00:00:00Z" }, "reachability must be one of live, suspended, deactivated, unchecked"],
      [{ kind: "reachability", handle: "a", reachability: "live" }, "checked_at must be an ISO timestamp with a time zone, e.g. 2025-01-31T12:00:00Z"],
    ];
    for (const [line, reason] of cases) {
      const text = typeof line === "string" ? line : JSON.stringify(line);
      assert.deepEqual(parseObservation(text, 7, { now: NOW }), { ok: false, error: `line 7: ${reason}` }, text);
    }
  });
});

describe("demoObservationLines", () => {
  test("is deterministic and never calls Math.random", () => {
    const random = Math.random;
    Math.random = () => {
      throw new Error("Math.random called");
    };
    try {
      const first = demoObservationLines({ now: NOW });
      assert.deepEqual(demoObservationLines({ now: NOW }), first);
      assert.ok(first.length > 20_000, `${first.length} lines`);
      for (const [i, line] of first.entries()) {
        const parsed = parseObservation(line, i + 1, { now: NOW });
        if (!parsed.ok) assert.fail(parsed.error);
      }
    } finally {
      Math.random = random;
    }
  });
});

// One database per driver for both parts: creating a PGlite database costs seconds.
eachDatabase("index import", (get) => {
  describe("importObservations", () => {
    test("writes wallets, links, farcaster accounts and reachability", async () => {
      const { db } = get();
      const counts = await importObservations(db, FILE, { now: NOW });
      assert.deepEqual(counts, {
        lines: 12,
        wallets_added: 5,
        observations_added: 9,
        observations_updated: 0,
        reachability_updated: 2,
        unchanged: 0,
      });
      const rows = await dump(db);
      const t = (iso: string) => iso.replace("Z", "+00:00");
      assert.deepEqual(rows.wallets, [
        { address: w1, last_updated: t("2025-05-04T00:00:00Z"), checked_at: t("2025-05-04T00:00:00Z") },
        // a line without observed_at is observed now
        { address: w2, last_updated: t("2025-06-01T00:00:00Z"), checked_at: t("2025-06-01T00:00:00Z") },
        { address: w3, last_updated: t("2025-05-06T00:00:00Z"), checked_at: t("2025-05-06T00:00:00Z") },
        // checked, nothing attached
        { address: w4, last_updated: null, checked_at: t("2025-05-10T00:00:00Z") },
        { address: w5, last_updated: t("2025-05-07T00:00:00Z"), checked_at: t("2025-05-07T00:00:00Z") },
      ]);
      const link = (wallet: string, kind: string, value: string, route: string, observed: string, extra: object = {}) => ({
        wallet, kind, value, route, fid: null, self_declared: false, detail: null, observed_at: t(observed), ...extra,
      });
      assert.deepEqual(rows.links, [
        link(w1, "ens", "alice.eth", "ens-primary", "2025-05-04T00:00:00Z"),
        link(w1, "farcaster", "42", "farcaster-verification", "2025-05-03T00:00:00Z", { fid: 42 }),
        link(w1, "twitter", "alice_txt", "ens-text", "2025-05-02T00:00:00Z", { self_declared: true }),
        link(w1, "twitter", "alice_x", "x-signin", "2025-05-01T00:00:00Z"),
        link(w2, "github", "bob-dev", "github-signin", "2025-05-05T00:00:00Z"),
        link(w2, "lens", "bob.lens", "lens-profile", "2025-06-01T00:00:00Z"),
        link(w3, "agent", "agent", "agent-registry", "2025-05-06T00:00:00Z", { detail: { is_agent: true, name: "Bot", framework: "eliza" } }),
        link(w5, "farcaster", "42", "farcaster-verification", "2025-04-01T00:00:00Z", { fid: 42 }),
        // a route outside the allowlist is stored; it just yields no evidence class
        link(w5, "twitter", "judy", "scraper-legacy", "2025-05-07T00:00:00Z"),
      ]);
      assert.deepEqual(rows.farcaster_accounts, [{ fid: 42, username: "alice", followers: 10, updated_at: t("2025-05-03T00:00:00Z") }]);
      assert.deepEqual(rows.twitter_reachability, [
        { handle: "alice_txt", reachability: "suspended", checked_at: t("2025-05-29T00:00:00Z") },
        { handle: "alice_x", reachability: "live", checked_at: t("2025-05-30T00:00:00Z") },
      ]);
    });

    test("importing the same lines again changes nothing, even later", async () => {
      const { db } = get();
      const snapshot = await dump(db);
      const later = new Date(NOW.getTime() + 7 * DAY);
      // an async source (standard input, a file) reads the same as an array
      async function* lines() {
        yield* FILE;
      }
      const counts = await importObservations(db, lines(), { now: later });
      assert.deepEqual(counts, {
        lines: 12,
        wallets_added: 0,
        observations_added: 0,
        observations_updated: 0,
        reachability_updated: 0,
        unchanged: 12,
      });
      assert.deepEqual(await dump(db), snapshot);
    });

    test("a newer explicit observation moves times forward; older or undated ones do not", async () => {
      const { db } = get();
      const newer = [
        { wallet: w1, kind: "twitter", route: "x-signin", handle: "alice_x", observed_at: "2025-05-20T00:00:00Z" },
        { wallet: w1, kind: "farcaster", route: "farcaster-verification", fid: 42, username: "alice", followers: 99, observed_at: "2025-05-21T00:00:00Z" },
        { kind: "reachability", handle: "alice_txt", reachability: "live", checked_at: "2025-05-31T00:00:00Z" },
        { wallet: w4, kind: "empty", route: "correlation", observed_at: "2025-05-25T00:00:00Z" },
        { wallet: w2, kind: "github", route: "github-signin", username: "bob-dev", observed_at: "2025-01-01T00:00:00Z" },
        { wallet: w3, kind: "agent", route: "agent-registry", is_agent: true, name: "Bot", framework: "eliza" },
      ].map((line) => JSON.stringify(line));
      const counts = await importObservations(db, newer, { now: NOW });
      assert.deepEqual(counts, {
        lines: 6,
        wallets_added: 0,
        observations_added: 0,
        observations_updated: 2,
        reachability_updated: 1,
        unchanged: 2,
      });
      const [wallet] = await db.query<{ last_updated: Date; checked_at: Date }>(
        "SELECT last_updated, checked_at FROM wallets WHERE address = $1",
        [w1],
      );
      assert.deepEqual(wallet, { last_updated: new Date("2025-05-21T00:00:00Z"), checked_at: new Date("2025-05-21T00:00:00Z") });
      const [empty] = await db.query("SELECT last_updated, checked_at FROM wallets WHERE address = $1", [w4]);
      assert.deepEqual(empty, { last_updated: null, checked_at: new Date("2025-05-25T00:00:00Z") });
      const [account] = await db.query("SELECT username, followers, updated_at FROM farcaster_accounts WHERE fid = 42");
      assert.deepEqual(account, { username: "alice", followers: 99, updated_at: new Date("2025-05-21T00:00:00Z") });
      const [reach] = await db.query("SELECT reachability FROM twitter_reachability WHERE handle = 'alice_txt'");
      assert.deepEqual(reach, { reachability: "live" });
      const [github] = await db.query("SELECT observed_at FROM links WHERE wallet = $1 AND kind = 'github'", [w2]);
      assert.deepEqual(github, { observed_at: new Date("2025-05-05T00:00:00Z") });

      // a changed descriptor is an update even without a date; the same file twice then is not
      const retyped = JSON.stringify({ wallet: w3, kind: "agent", route: "agent-registry", is_agent: true, name: "Bot 2" });
      assert.equal((await importObservations(db, [retyped], { now: NOW })).observations_updated, 1);
      assert.equal((await importObservations(db, [retyped], { now: NOW })).unchanged, 1);
      const [detail] = await db.query("SELECT detail FROM links WHERE wallet = $1", [w3]);
      assert.deepEqual(detail, { detail: { is_agent: true, name: "Bot 2" } });
    });

    test("repeated keys within one file: the newest line decides", async () => {
      const { db } = get();
      const w = "0x1234000000000000000000000000000000001234";
      const lines = [
        { wallet: w, kind: "twitter", route: "x-signin", handle: "dup", observed_at: "2025-05-02T00:00:00Z" },
        { wallet: w, kind: "twitter", route: "x-signin", handle: "DUP", observed_at: "2025-05-03T00:00:00Z" },
        { wallet: w, kind: "twitter", route: "x-signin", handle: "dup", observed_at: "2025-05-01T00:00:00Z" },
        { kind: "reachability", handle: "dup", reachability: "suspended", checked_at: "2025-05-04T00:00:00Z" },
        { kind: "reachability", handle: "dup", reachability: "live", checked_at: "2025-05-05T00:00:00Z" },
      ].map((line) => JSON.stringify(line));
      const counts = await importObservations(db, lines, { now: NOW });
      assert.deepEqual(counts, {
        lines: 5,
        wallets_added: 1,
        observations_added: 1,
        observations_updated: 0,
        reachability_updated: 1,
        unchanged: 3,
      });
      const rows = await select(db, "SELECT value, observed_at FROM links WHERE wallet = $1", [w]);
      assert.deepEqual(rows, [{ value: "dup", observed_at: new Date("2025-05-03T00:00:00Z") }]);
      const [reach] = await db.query("SELECT reachability FROM twitter_reachability WHERE handle = 'dup'");
      assert.deepEqual(reach, { reachability: "live" });
    });

    test("a bad line stops the import with one line naming it, and nothing is written", async () => {
      const { db } = get();
      const snapshot = await dump(db);
      const lines = [
        JSON.stringify({ wallet: "0x9999000000000000000000000000000000009999", kind: "ens", route: "ens-primary", name: "new.eth" }),
        "",
        JSON.stringify({ wallet: "0x9999000000000000000000000000000000009999", kind: "lens", route: "lens-profile" }),
      ];
      await assert.rejects(importObservations(db, lines, { now: NOW }), { message: "line 3: handle must be a non-empty string" });
      await assert.rejects(importObservations(db, ["{}"], { now: NOW }), (error: Error) => {
        assert.match(error.message, /^line 1: kind must be one of/);
        assert.doesNotMatch(error.message, /\n/);
        return true;
      });
      assert.deepEqual(await dump(db), snapshot);
    });
  });

  describe("the demo index", () => {
    before(async () => {
      const { db } = get();
      await db.exec("DELETE FROM links; DELETE FROM farcaster_accounts; DELETE FROM twitter_reachability; DELETE FROM wallets");
    });
    const dataDir = mkdtempSync(join(tmpdir(), "walletid-demo-"));
    const stale = new Date(NOW.getTime() - 30 * DAY);
    let demo: Awaited<ReturnType<typeof ensureDemo>>;

    after(() => rmSync(dataDir, { recursive: true, force: true }));

    test("ensureDemo loads it once, with an account, a Scale pack and a key saved to the data dir", async () => {
      const { db } = get();
      demo = await ensureDemo(db, { now: NOW, dataDir });
      assert.equal(demo.created, true);
      assert.match(demo.apiKey!, /^wid_live_[A-Za-z0-9]{32}$/);
      const path = join(dataDir, "demo-api-key");
      assert.equal(readFileSync(path, "utf8"), `${demo.apiKey}\n`);
      assert.equal(statSync(path).mode & 0o777, 0o600);
      const [account] = await db.query("SELECT email, free_allowance FROM accounts WHERE id = $1", [demo.accountId]);
      assert.deepEqual(account, { email: "demo@walletid.local", free_allowance: true });
      const grants = await select(db, "SELECT pack, matches, grant_key FROM credit_grants WHERE account_id = $1", [demo.accountId]);
      assert.deepEqual(grants, [{ pack: "Scale", matches: 25000, grant_key: "demo-scale" }]);
      const keys = await select(db, "SELECT name, prefix FROM api_keys WHERE account_id = $1", [demo.accountId]);
      assert.deepEqual(keys, [{ name: "demo", prefix: demo.apiKey!.slice(0, 12) }]);

      assert.deepEqual(await ensureDemo(db, { now: NOW, dataDir }), { created: false });
      assert.equal(await count(db, "SELECT count(*) FROM accounts"), 1);
    });

    test("holds at least 10,000 wallets with every identity kind and every route", async () => {
      const { db } = get();
      assert.ok((await count(db, "SELECT count(*) FROM wallets")) >= 10_000);
      const kinds = await db.query<{ kind: string }>("SELECT DISTINCT kind FROM links ORDER BY kind");
      assert.deepEqual(kinds.map((k) => k.kind), ["agent", "ens", "farcaster", "github", "lens", "twitter"]);
      const routes = await db.query<{ route: string; classified: boolean }>(
        "SELECT DISTINCT l.route, r.route IS NOT NULL AS classified FROM links l LEFT JOIN evidence_routes r USING (route) ORDER BY 1",
      );
      const allowlist = await db.query<{ route: string }>("SELECT route FROM evidence_routes ORDER BY route");
      assert.deepEqual(routes.filter((r) => r.classified).map((r) => r.route), allowlist.map((r) => r.route));
      assert.deepEqual(routes.filter((r) => !r.classified).map((r) => r.route), ["scraper-legacy"]);
      // farcaster accounts with and without a follower count, and an fid verified by several wallets
      assert.ok((await count(db, "SELECT count(*) FROM farcaster_accounts WHERE followers > 0")) > 100);
      assert.ok((await count(db, "SELECT count(*) FROM farcaster_accounts WHERE followers IS NULL")) > 0);
      assert.ok((await count(db, "SELECT count(*) FROM (SELECT fid FROM links WHERE fid IS NOT NULL GROUP BY fid HAVING count(*) > 1) s")) > 0);
    });

    test("covers every evidence and reachability case", async () => {
      const { db } = get();
      const attested = "SELECT route FROM evidence_routes WHERE class <> 'aggregated' AND NOT self_declared";
      // self-declared twitter through ens-text, some also marked on the line
      assert.ok((await count(db, "SELECT count(*) FROM links WHERE kind = 'twitter' AND route = 'ens-text' AND self_declared")) > 0);
      assert.ok((await count(db, "SELECT count(*) FROM links WHERE kind = 'twitter' AND route = 'ens-text' AND NOT self_declared")) > 0);
      // wallets resting on correlation alone
      const aggregatedOnly = `SELECT wallet FROM links l JOIN evidence_routes r USING (route)
        GROUP BY wallet HAVING bool_and(r.class = 'aggregated')`;
      assert.ok((await count(db, `SELECT count(*) FROM (${aggregatedOnly}) s`)) > 10);
      assert.equal(await count(db, `SELECT count(*) FROM (${aggregatedOnly}) s WHERE wallet = $1`, [DEMO_EXAMPLES.aggregatedOnly.address]), 1);
      // two attested handles on one wallet: both live, or the first dead and the second live
      const twoHandles = (condition: string) => `SELECT count(*) FROM (
        SELECT l.wallet FROM links l JOIN twitter_reachability t ON t.handle = l.value
         WHERE l.kind = 'twitter' AND l.route IN (${attested})
         GROUP BY l.wallet HAVING count(DISTINCT l.value) = 2 AND ${condition}) s`;
      assert.ok((await count(db, twoHandles("bool_and(t.reachability = 'live')"))) > 10);
      assert.ok((await count(db, twoHandles("bool_or(t.reachability IN ('suspended', 'deactivated')) AND bool_or(t.reachability = 'live')"))) > 5);
      // every reachability value, and handles never checked
      const values = await db.query<{ reachability: string }>("SELECT DISTINCT reachability FROM twitter_reachability ORDER BY 1");
      assert.deepEqual(values.map((v) => v.reachability), ["deactivated", "live", "suspended", "unchecked"]);
      assert.ok((await count(db, "SELECT count(*) FROM links l WHERE kind = 'twitter' AND NOT EXISTS (SELECT 1 FROM twitter_reachability t WHERE t.handle = l.value)")) > 100);
    });

    test("has stale, fresh, checked-empty, non-billable and agent wallets, and the examples", async () => {
      const { db } = get();
      assert.ok((await count(db, "SELECT count(*) FROM wallets WHERE last_updated < $1", [stale])) > 500);
      assert.ok((await count(db, "SELECT count(*) FROM wallets WHERE last_updated >= $1", [stale])) > 5000);
      const checkedEmpty = "SELECT count(*) FROM wallets w WHERE NOT EXISTS (SELECT 1 FROM links l WHERE l.wallet = w.address)";
      assert.ok((await count(db, checkedEmpty)) > 100);
      // found but not billable: only ens, lens or github
      assert.ok((await count(db, `SELECT count(*) FROM (SELECT wallet FROM links GROUP BY wallet
        HAVING bool_and(kind IN ('ens', 'lens', 'github'))) s`)) > 500);
      const agents = (twitter: boolean) => `SELECT count(*) FROM links a WHERE a.kind = 'agent' AND
        ${twitter ? "" : "NOT"} EXISTS (SELECT 1 FROM links l WHERE l.wallet = a.wallet AND l.kind = 'twitter' AND l.route = 'x-signin')`;
      assert.ok((await count(db, agents(true))) > 0);
      assert.ok((await count(db, agents(false))) > 10);

      const x = DEMO_EXAMPLES;
      const [staleExample] = await db.query("SELECT last_updated FROM wallets WHERE address = $1", [x.stale.address]);
      assert.deepEqual(staleExample, { last_updated: new Date(NOW.getTime() - 90 * DAY) });
      const [empty] = await db.query("SELECT last_updated, checked_at FROM wallets WHERE address = $1", [x.checkedEmpty.address]);
      assert.deepEqual(empty, { last_updated: null, checked_at: new Date(NOW.getTime() - 3 * DAY) });
      const [corrected] = await db.query<{ handles: string }>(
        `SELECT string_agg(l.value || ':' || coalesce(t.reachability, 'none'), ',' ORDER BY l.value) AS handles
           FROM links l LEFT JOIN twitter_reachability t ON t.handle = l.value WHERE l.wallet = $1`,
        [x.correctedHandle.address],
      );
      assert.equal(corrected.handles, "dave_new:live,dave_old:suspended");
      const inIndex = await db.query<{ address: string }>("SELECT address FROM wallets WHERE address = ANY ($1::text[]) ORDER BY 1", [
        Object.values(x).map((e) => e.address),
      ]);
      const expected = Object.entries(x).filter(([name]) => name !== "neverSeen").map(([, e]) => e.address).sort();
      assert.deepEqual(inIndex.map((r) => r.address), expected);
    });
  });
});
