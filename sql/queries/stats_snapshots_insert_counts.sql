-- name: stats_snapshots_insert_counts
-- Counts the index once for day $1; the first writer of the day wins, so every reader of a
-- day sees the same numbers.
INSERT INTO stats_snapshots (day, counts, as_of)
SELECT $1::date, jsonb_build_object(
         'total_wallets', (SELECT count(DISTINCT wallet) FROM links),
         'wallets_checked', (SELECT count(*) FROM wallets),
         'twitter', (SELECT count(DISTINCT wallet) FROM links WHERE kind = 'twitter'),
         'farcaster', (SELECT count(DISTINCT wallet) FROM links WHERE kind = 'farcaster'),
         'ens', (SELECT count(DISTINCT wallet) FROM links WHERE kind = 'ens'),
         'lens', (SELECT count(DISTINCT wallet) FROM links WHERE kind = 'lens'),
         'github', (SELECT count(DISTINCT wallet) FROM links WHERE kind = 'github'),
         'avg_followers', (SELECT coalesce(round(avg(fa.followers)), 0) FROM farcaster_accounts fa
                            WHERE EXISTS (SELECT 1 FROM links l WHERE l.kind = 'farcaster' AND l.fid = fa.fid)),
         'max_followers', (SELECT coalesce(max(fa.followers), 0) FROM farcaster_accounts fa
                            WHERE EXISTS (SELECT 1 FROM links l WHERE l.kind = 'farcaster' AND l.fid = fa.fid))),
       $2
    ON CONFLICT (day) DO NOTHING
