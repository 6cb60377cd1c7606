-- name: wallets_refresh_last_updated
-- last_updated is the newest identity observation of the wallet.
UPDATE wallets w
   SET last_updated = m.latest
  FROM (SELECT wallet, max(observed_at) AS latest FROM links WHERE wallet = ANY ($1::text[]) GROUP BY wallet) m
 WHERE w.address = m.wallet AND w.last_updated IS DISTINCT FROM m.latest
