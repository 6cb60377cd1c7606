-- name: watched_wallets_insert_many
-- Adds the wallets $2 to account $1's watchlist at $3, all or none: none when the account would
-- then watch more than $4. Run after account_lock. `fresh`: the wallets not watched before.
WITH current AS (
  SELECT count(*)::integer AS n FROM watched_wallets WHERE account_id = $1
), fresh AS (
  SELECT DISTINCT t.wallet FROM unnest($2::text[]) AS t (wallet)
   WHERE NOT EXISTS (SELECT 1 FROM watched_wallets x WHERE x.account_id = $1 AND x.wallet = t.wallet)
), added AS (
  INSERT INTO watched_wallets (account_id, wallet, added_at)
  SELECT $1, f.wallet, $3 FROM fresh f
   WHERE (SELECT n FROM current) + (SELECT count(*) FROM fresh) <= $4
  RETURNING wallet
)
SELECT (SELECT count(*) FROM added)::integer AS added,
       (SELECT count(*) FROM fresh)::integer AS fresh,
       (SELECT n FROM current)::integer AS before
