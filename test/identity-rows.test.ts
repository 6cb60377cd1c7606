// identity_rows, behind every lookup, a metered call and a job's results: a twitter handle's
// reachability joins the twitter link only, never another identity that happens to share its text.
import { test } from "node:test";
import assert from "node:assert/strict";
import { importObservations } from "../src/index/import.ts";
import { sql } from "../src/db/queries.ts";
import { eachDatabase } from "./support/db.ts";
import { loadFixtures, W } from "./support/fixtures.ts";

const NOW = new Date("2026-11-20T12:00:00Z");
const SHARED = `0x${"8".repeat(40)}`;

type Row = {
  address: string;
  kind: string | null;
  value: string | null;
  reachability: string | null;
  reachability_checked_at: Date | null;
};

eachDatabase("identity_rows", (get) => {
  test("reachability is joined to twitter links only, by their handle", async () => {
    const { db } = get();
    await loadFixtures(db, NOW);
    const at = (n: number) => new Date(NOW.getTime() - n * 86_400_000).toISOString();
    // one text, "zed", as a twitter handle, a github login and a lens handle of the same wallet
    await importObservations(
      db,
      [
        { wallet: SHARED, kind: "twitter", route: "x-signin", handle: "zed", observed_at: at(1) },
        { wallet: SHARED, kind: "github", route: "github-signin", username: "zed", observed_at: at(1) },
        { wallet: SHARED, kind: "lens", route: "lens-profile", handle: "zed", observed_at: at(1) },
        { kind: "reachability", handle: "zed", reachability: "suspended", checked_at: at(2) },
      ].map((line) => JSON.stringify(line)),
      { now: NOW },
    );

    const rows = await db.query<Row>(sql("wallets_select_records"), [[SHARED, W.full, W.empty, W.neverSeen]]);
    const shown = rows
      .map((r) => ({ address: r.address, kind: r.kind, value: r.value, reachability: r.reachability, checked: r.reachability_checked_at?.toISOString() ?? null }))
      .sort((a, b) => `${a.address} ${a.kind} ${a.value}`.localeCompare(`${b.address} ${b.kind} ${b.value}`));
    assert.deepEqual(shown, [
      // checked-empty: one row without identity columns; never seen: no row
      { address: W.empty, kind: null, value: null, reachability: null, checked: null },
      { address: SHARED, kind: "github", value: "zed", reachability: null, checked: null },
      { address: SHARED, kind: "lens", value: "zed", reachability: null, checked: null },
      { address: SHARED, kind: "twitter", value: "zed", reachability: "suspended", checked: at(2) },
      { address: W.full, kind: "ens", value: "alice.eth", reachability: null, checked: null },
      { address: W.full, kind: "farcaster", value: "3", reachability: null, checked: null },
      { address: W.full, kind: "twitter", value: "alice", reachability: "live", checked: at(2) },
    ]);
  });
});
