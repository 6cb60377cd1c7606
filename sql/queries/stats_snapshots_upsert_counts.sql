-- name: stats_snapshots_upsert_counts
-- Counts the index for the stats resource and stores them as the row of day $1, taken at $2.
-- A second run the same day replaces that day's row: the operator asked for fresh counts.
-- Opted-out wallets (00021_opt_outs.sql) are counted as never seen: in no total.
-- Returns the stored row, so the task can report what it materialized.
WITH shown AS (
  SELECT l.wallet, l.kind, l.fid
    FROM links l
   WHERE NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = l.wallet)
)
INSERT INTO stats_snapshots AS s (day, counts, as_of)
SELECT $1::date, jsonb_build_object(
         'total_wallets', (SELECT count(DISTINCT wallet) FROM shown),
         'wallets_checked', (SELECT count(*) FROM wallets w WHERE NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = w.address)),
         'twitter', (SELECT count(DISTINCT wallet) FROM shown WHERE kind = 'twitter'),
         'farcaster', (SELECT count(DISTINCT wallet) FROM shown WHERE kind = 'farcaster'),
         'ens', (SELECT count(DISTINCT wallet) FROM shown WHERE kind = 'ens'),
         'lens', (SELECT count(DISTINCT wallet) FROM shown WHERE kind = 'lens'),
         'github', (SELECT count(DISTINCT wallet) FROM shown WHERE kind = 'github'),
         'avg_followers', (SELECT coalesce(round(avg(fa.followers)), 0) FROM farcaster_accounts fa
                            WHERE EXISTS (SELECT 1 FROM shown l WHERE l.kind = 'farcaster' AND l.fid = fa.fid)),
         'max_followers', (SELECT coalesce(max(fa.followers), 0) FROM farcaster_accounts fa
                            WHERE EXISTS (SELECT 1 FROM shown l WHERE l.kind = 'farcaster' AND l.fid = fa.fid))),
       $2::timestamptz
    ON CONFLICT (day) DO UPDATE SET counts = excluded.counts, as_of = excluded.as_of
RETURNING counts, as_of
