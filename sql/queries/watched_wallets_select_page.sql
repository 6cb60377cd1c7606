-- name: watched_wallets_select_page
-- A page of account $1's watchlist in the order added, after ($2, $3) when given, $4 rows.
SELECT wallet, added_at
  FROM watched_wallets
 WHERE account_id = $1
   AND ($2::timestamptz IS NULL OR (added_at, wallet) > ($2::timestamptz, $3::text))
 ORDER BY added_at, wallet
 LIMIT $4
