// reverse_entries, the ordered table behind reverse lookups: filled for an index that existed
// before its migration, kept current by triggers on every write, and paged by index range scan.
import { test } from "node:test";
import assert from "node:assert/strict";
import { openPglite } from "../src/db/pglite.ts";
import { openPostgres } from "../src/db/postgres.ts";
import { migrate, readMigrations } from "../src/db/migrate.ts";
import { loadQueries, sql } from "../src/db/queries.ts";
import type { Db } from "../src/db/types.ts";
import { createPostgresDatabase, eachDatabase } from "./support/db.ts";
import { loadFixtures, W } from "./support/fixtures.ts";

const NOW = new Date("2026-11-20T12:00:00Z");

async function entries(db: Db, kind: string, key: string) {
  const rows = await db.query<{ wallet: string; rank: number }>(
    "SELECT wallet, rank FROM reverse_entries WHERE kind = $1 AND key = $2 ORDER BY rank, wallet",
    [kind, key],
  );
  return rows.map((r) => ({ wallet: r.wallet, rank: r.rank }));
}

/** reverse_counts must agree with a count of reverse_entries, key by key. */
async function assertCountsAgree(db: Db): Promise<void> {
  const kept = await db.query<{ kind: string; key: string; n: number }>(
    "SELECT kind, key, n FROM reverse_counts WHERE n > 0 ORDER BY kind, key",
  );
  const counted = await db.query<{ kind: string; key: string; n: number }>(
    "SELECT kind, key, count(*)::integer AS n FROM reverse_entries GROUP BY kind, key ORDER BY kind, key",
  );
  assert.ok(counted.length > 0);
  assert.deepEqual([...kept], [...counted]);
}

for (const kind of ["pglite", "postgres"] as const) {
  test(`an index imported before the reverse migration is backfilled by it [${kind}]`, async () => {
    loadQueries();
    const created = kind === "postgres" ? await createPostgresDatabase() : undefined;
    const db = created ? openPostgres(created.url, { max: 2 }) : await openPglite();
    try {
      const all = readMigrations();
      const reverse = all.findIndex((m) => m.name === "reverse");
      await migrate(db, all.slice(0, reverse));
      // today's import ends with the watchlist's pass, which starts by taking the wallets marked in
      // watch_dirty (00022_webhooks.sql): an empty table stands in for it on this older schema
      await db.exec("CREATE TABLE watch_dirty (wallet text PRIMARY KEY)");
      await loadFixtures(db, NOW);
      await db.exec("DROP TABLE watch_dirty");
      await migrate(db, all);
      assert.deepEqual(await entries(db, "twitter", "alice"), [{ wallet: W.full, rank: -100 }]);
      assert.deepEqual(await entries(db, "farcaster", "mia"), [{ wallet: W.farcasterOnly, rank: -5 }]);
      await assertCountsAgree(db);
    } finally {
      await db.close();
      await created?.drop();
    }
  });
}

eachDatabase("reverse_entries", (get) => {
  test("triggers follow inserts, updates and deletes of links and farcaster accounts", async () => {
    const { db } = get();
    await loadFixtures(db, NOW);
    // no farcaster account: ranked last (1)
    assert.deepEqual(await entries(db, "twitter", "bob"), [{ wallet: W.selfDeclared, rank: 1 }]);
    // the correlation-only twitter wallet is a twitter holder, never a farcaster one
    assert.deepEqual(await entries(db, "twitter", "frank"), [{ wallet: W.aggregated, rank: 1 }]);

    await db.query("UPDATE farcaster_accounts SET followers = 7 WHERE fid = 3");
    assert.deepEqual(await entries(db, "twitter", "alice"), [{ wallet: W.full, rank: -7 }]);
    assert.deepEqual(await entries(db, "farcaster", "alice"), [{ wallet: W.full, rank: -7 }]);

    await db.query("DELETE FROM links WHERE wallet = $1 AND kind = 'twitter'", [W.full]);
    assert.deepEqual(await entries(db, "twitter", "alice"), []);
    assert.deepEqual(await entries(db, "farcaster", "alice"), [{ wallet: W.full, rank: -7 }]);
    await assertCountsAgree(db);
    const [alice] = await db.query<{ n: number }>("SELECT n FROM reverse_counts WHERE kind = 'twitter' AND key = 'alice'");
    assert.equal(alice.n, 0);
  });

  test("a page is one index range scan of the primary key: the keyset position is an index bound, the entries never sorted", async () => {
    const { db } = get();
    const query = `EXPLAIN ${sql("reverse_entries_select_page")}`.replace(/\$(\d)/g, (_, n) =>
      ["'twitter'", "'alice'", "(-2147483648)", "''", "101", "NULL"][Number(n) - 1],
    );
    // a table of a few rows is cheaper to scan whole; the bench measures the real sizes
    const plan = await db.transaction(async (tx) => {
      await tx.query("SET LOCAL enable_seqscan = off");
      return await tx.query<Record<string, string>>(query);
    });
    const text = plan.map((r) => Object.values(r)[0]).join("\n");
    assert.match(text, /Index (Only )?Scan using reverse_entries_pkey on reverse_entries e/, text);
    assert.match(text, /Index Cond: .*ROW\(rank, wallet\) > ROW/, text);
    // the identity rows are put in page order by the entries' row numbers, which the scan gives
    assert.doesNotMatch(text, /Sort Key: [^\n]*\brank\b/, text);
  });
});
