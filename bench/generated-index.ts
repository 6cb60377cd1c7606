// The bench's generated identity index: a PostgreSQL database of N wallets loaded set-based,
// whose addresses the bench recomputes from a row number to pick wallets that are in it.
import { createHash } from "node:crypto";
import postgres from "postgres";
import { openDatabase } from "../src/db/open.ts";
import { readMigrations } from "../src/db/migrate.ts";
import type { Db, DbTimeouts } from "../src/db/types.ts";

// Bump when the generator below changes: a database holding another version is rebuilt.
const GENERATOR_VERSION = 3;

// The bench's own handle sets up accounts and removes what the job case wrote (statements over
// 50,000 wallets and their triggers) on a machine the bench itself saturates: the service's
// 3 s statement deadline is for requests, not for this.
const BENCH_TIMEOUTS: DbTimeouts = { connectMs: 10_000, statementMs: 300_000, idleMs: 60_000 };

/**
 * A handle held by 10,000 wallets at any size (one in a hundred of 1,000,000, one in a thousand of
 * 10,000,000): the reverse-lookup case pages it to the end, so its pages compare across sizes.
 */
export const CROWD_HANDLE = "benchcrowd";
const CROWD_HOLDERS = 10_000;

/** Every how many wallets one holds the crowd handle. */
function crowdEvery(wallets: number): number {
  return Math.max(1, Math.floor(wallets / CROWD_HOLDERS));
}

function md5Hex(text: string): string {
  return createHash("md5").update(text).digest("hex");
}

/** The address of generated wallet n (1-based); ADDRESS_SQL computes the same in the database. */
export function benchAddress(n: number): string {
  return `0x${md5Hex(`walletid-bench:${n}`)}${md5Hex(`walletid-bench:${n}:tail`).slice(0, 8)}`;
}

const ADDRESS_SQL = `'0x' || md5('walletid-bench:' || n) || left(md5('walletid-bench:' || n || ':tail'), 8)`;

/**
 * What a wallet holds, by per-mille bucket of its row number: 5% checked-empty, then 1 to 3
 * identities; over all wallets about 40% twitter, 30% farcaster, 40% ens, 8% lens, 6% github.
 */
const PROFILES: Array<[perMille: number, kinds: string[]]> = [
  [50, []],
  [220, ["twitter"]],
  [145, ["farcaster"]],
  [255, ["ens"]],
  [55, ["lens"]],
  [35, ["github"]],
  [70, ["twitter", "farcaster"]],
  [50, ["twitter", "ens"]],
  [40, ["farcaster", "ens"]],
  [10, ["ens", "lens"]],
  [10, ["twitter", "github"]],
  [5, ["farcaster", "lens"]],
  [5, ["ens", "github"]],
  [30, ["twitter", "farcaster", "ens"]],
  [10, ["twitter", "ens", "lens"]],
  [10, ["twitter", "farcaster", "github"]],
];

/** The profiles as a VALUES list numbered from 1, and the per-mille lower bound of each. */
function profilesSql(): { values: string; lowerBounds: string } {
  let lo = 0;
  const bounds: number[] = [];
  const rows = PROFILES.map(([perMille, kinds], i) => {
    bounds.push(lo);
    lo += perMille;
    return `(${i + 1}, '{${kinds.join(",")}}'::text[])`;
  });
  if (lo !== 1000) throw new Error(`Cannot build the bench index: profiles add up to ${lo} per mille, not 1000`);
  return { values: `(VALUES ${rows.join(", ")}) AS p(id, kinds)`, lowerBounds: `'{${bounds.join(",")}}'::int[]` };
}

/** A uniform integer in [0, mod) drawn from the row number n; `salt` makes draws independent. */
function draw(salt: number, mod: number): string {
  return `mod(abs(hashint4extended(n, ${salt})), ${mod})`;
}

// One transaction: a crash half-way leaves no marker, so the next run rebuilds.
function loadSql(wallets: number, marker: string): string {
  const profiles = profilesSql();
  return `
SET LOCAL synchronous_commit = off;
SET LOCAL work_mem = '256MB';
SET LOCAL maintenance_work_mem = '512MB';
SET LOCAL jit = off;
-- the generated rows reference each other consistently; skipping the foreign-key triggers
-- saves one trigger call per link row
SET LOCAL session_replication_role = replica;

CREATE TEMP TABLE bench_seed ON COMMIT DROP AS
SELECT n, ${ADDRESS_SQL} AS address, p.kinds,
       -- newest observation 0 to 40 days ago, so about a quarter of the records are stale
       now() - interval '1 minute' * ${draw(1, 40 * 24 * 60)} AS observed_at
  FROM generate_series(1, ${wallets}) AS n
  -- width_bucket numbers the profile whose per-mille range holds the draw
  JOIN ${profiles.values} ON p.id = width_bucket(${draw(0, 1000)}::int, ${profiles.lowerBounds});

-- sorted by key, so the primary-key btrees grow by appending; for these ASCII keys byte order
-- ("C") is the index order and sorts several times faster than the database collation
INSERT INTO wallets (address, last_updated, checked_at)
SELECT address,
       CASE WHEN cardinality(kinds) > 0 THEN observed_at END,
       least(now(), observed_at + interval '1 minute' * ${draw(2, 600)})
  FROM bench_seed
 ORDER BY address COLLATE "C";

INSERT INTO links (wallet, kind, value, route, fid, self_declared, detail, observed_at)
SELECT wallet, kind, value, route, fid, false, NULL, observed_at
  FROM (
    SELECT address, kind,
           CASE kind WHEN 'twitter' THEN 'user' || n
                     WHEN 'farcaster' THEN n::text
                     WHEN 'ens' THEN 'wallet' || n || '.eth'
                     WHEN 'lens' THEN 'wallet' || n || '.lens'
                     ELSE 'dev' || n END,
           CASE kind WHEN 'twitter' THEN
                       CASE WHEN ${draw(3, 100)} < 70 THEN 'x-signin'
                            WHEN ${draw(3, 100)} < 85 THEN 'farcaster-x-verified'
                            WHEN ${draw(3, 100)} < 95 THEN 'ens-text'
                            ELSE 'correlation' END
                     WHEN 'farcaster' THEN 'farcaster-verification'
                     WHEN 'ens' THEN 'ens-primary'
                     WHEN 'lens' THEN 'lens-profile'
                     ELSE 'github-signin' END,
           CASE WHEN kind = 'farcaster' THEN n::bigint END,
           observed_at - interval '1 day' * (ord - 1)
      FROM bench_seed
     CROSS JOIN LATERAL unnest(kinds) WITH ORDINALITY AS k(kind, ord)
    UNION ALL
    -- 10,000 wallets, evenly spread, also hold the crowd handle, signed in
    SELECT address, 'twitter', '${CROWD_HANDLE}', 'x-signin', NULL, observed_at
      FROM bench_seed
     WHERE n % ${crowdEvery(wallets)} = 0
    UNION ALL
    -- one twitter handle in ten (not already aggregated) is corroborated by correlation as well
    SELECT address, 'twitter', 'user' || n, 'correlation', NULL, observed_at - interval '3 days'
      FROM bench_seed
     WHERE 'twitter' = ANY (kinds) AND ${draw(3, 100)} < 95 AND ${draw(4, 10)} = 0
  ) AS l (wallet, kind, value, route, fid, observed_at)
 ORDER BY wallet COLLATE "C", kind COLLATE "C", value COLLATE "C", route COLLATE "C";

INSERT INTO farcaster_accounts (fid, username, followers, updated_at)
SELECT n, 'caster' || n,
       CASE WHEN ${draw(5, 10)} = 0 THEN NULL ELSE ${draw(6, 1000)} * ${draw(7, 50)} END,
       observed_at
  FROM bench_seed
 WHERE 'farcaster' = ANY (kinds)
 ORDER BY n;

-- 60% of the handles were checked: mostly live, some suspended or deactivated
INSERT INTO twitter_reachability (handle, reachability, checked_at)
SELECT 'user' || n,
       CASE WHEN ${draw(9, 100)} < 90 THEN 'live' WHEN ${draw(9, 100)} < 96 THEN 'suspended' ELSE 'deactivated' END,
       now() - interval '1 minute' * ${draw(10, 20 * 24 * 60)}
  FROM bench_seed
 WHERE 'twitter' = ANY (kinds) AND ${draw(8, 100)} < 60
 ORDER BY ('user' || n) COLLATE "C";

-- the replica role above skipped the triggers that keep reverse_entries and reverse_counts:
-- fill them in one pass each
INSERT INTO reverse_entries (kind, key, wallet, rank)
SELECT * FROM reverse_entries_for(ARRAY(SELECT address FROM wallets))
 ORDER BY 1, 2, 4, 3;
INSERT INTO reverse_counts (kind, key, n)
SELECT kind, key, count(*) FROM reverse_entries GROUP BY kind, key;

CREATE TABLE bench_meta (version text NOT NULL);
INSERT INTO bench_meta (version) VALUES ('${marker}');
`;
}

/** Names the index a database must hold to be reused: generator, size and schema. */
function indexMarker(wallets: number): string {
  const schema = createHash("sha256")
    .update(readMigrations().map((m) => `${m.version}:${m.text}`).join("\n"))
    .digest("hex")
    .slice(0, 12);
  return `generator ${GENERATOR_VERSION}, ${wallets} wallets, migrations ${schema}`;
}

async function readMarker(db: Db): Promise<string | undefined> {
  const [row] = await db.query<{ present: boolean }>("SELECT to_regclass('bench_meta') IS NOT NULL AS present");
  if (!row.present) return undefined;
  const [meta] = await db.query<{ version: string }>("SELECT version FROM bench_meta");
  return meta?.version;
}

export interface PreparedIndex {
  db: Db;
  databaseUrl: string;
  /** Milliseconds the load took, or null when the existing index was reused. */
  loadMs: number | null;
  counts: { wallets: number; links: number; farcasterAccounts: number; twitterReachability: number };
}

/**
 * Opens (creating, migrating and loading when needed) the bench database on the server of
 * `serverUrl`; `adminDatabase` is any database there to issue CREATE DATABASE from.
 */
export async function prepareIndex(options: {
  serverUrl: string;
  adminDatabase: string;
  database: string;
  wallets: number;
  rebuild: boolean;
  log: (line: string) => void;
}): Promise<PreparedIndex> {
  const databaseUrl = `${options.serverUrl}/${options.database}`;
  const marker = indexMarker(options.wallets);
  const admin = postgres(`${options.serverUrl}/${options.adminDatabase}`, { max: 1, onnotice: () => {} });
  let db: Db | undefined;
  try {
    const exists = (await admin`SELECT 1 FROM pg_database WHERE datname = ${options.database}`).length > 0;
    if (exists && !options.rebuild) {
      db = await openDatabase({ databaseUrl, timeouts: BENCH_TIMEOUTS });
      const found = await readMarker(db);
      if (found === marker) {
        options.log(`Reusing the index in ${options.database} (${marker}).`);
        return { db, databaseUrl, loadMs: null, counts: await countIndex(db) };
      }
      options.log(`Rebuilding ${options.database}: it holds ${found ? `"${found}"` : "no complete bench index"}, the bench needs "${marker}".`);
      await db.close();
      db = undefined;
    }
    if (exists) await admin.unsafe(`DROP DATABASE "${options.database}" WITH (FORCE)`);
    await admin.unsafe(`CREATE DATABASE "${options.database}"`);
  } finally {
    await admin.end({ timeout: 5 });
  }

  db = await openDatabase({ databaseUrl, timeouts: BENCH_TIMEOUTS });
  options.log(`Loading ${options.wallets.toLocaleString("en-US")} generated wallets into ${options.database} ...`);
  const started = performance.now();
  await db.transaction((tx) => tx.exec(loadSql(options.wallets, marker)), { bulk: true });
  // VACUUM sets hint bits and the visibility map now rather than during the first measured round
  await db.exec("VACUUM (ANALYZE) wallets, links, farcaster_accounts, twitter_reachability, reverse_entries, reverse_counts");
  const loadMs = performance.now() - started;
  return { db, databaseUrl, loadMs, counts: await countIndex(db) };
}

async function countIndex(db: Db): Promise<PreparedIndex["counts"]> {
  const [row] = await db.query<{ wallets: string; links: string; fc: string; tr: string }>(`
    SELECT (SELECT count(*) FROM wallets) AS wallets, (SELECT count(*) FROM links) AS links,
           (SELECT count(*) FROM farcaster_accounts) AS fc, (SELECT count(*) FROM twitter_reachability) AS tr`);
  return {
    wallets: Number(row.wallets),
    links: Number(row.links),
    farcasterAccounts: Number(row.fc),
    twitterReachability: Number(row.tr),
  };
}
