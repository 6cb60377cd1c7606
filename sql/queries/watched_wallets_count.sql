-- name: watched_wallets_count
-- How many wallets account $1 watches.
SELECT count(*)::integer AS total FROM watched_wallets WHERE account_id = $1
