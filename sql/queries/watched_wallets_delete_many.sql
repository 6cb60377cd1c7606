-- name: watched_wallets_delete_many
-- Removes the wallets $2 from account $1's watchlist, and the snapshot of each that nobody else
-- watches (so the triggers stop looking at it).
WITH removed AS (
  DELETE FROM watched_wallets WHERE account_id = $1 AND wallet = ANY ($2::text[]) RETURNING wallet
), unwatched AS (
  DELETE FROM watch_snapshots s USING removed r
   WHERE s.wallet = r.wallet
     AND NOT EXISTS (SELECT 1 FROM watched_wallets w WHERE w.wallet = s.wallet AND w.account_id <> $1)
)
SELECT count(*)::integer AS removed FROM removed
