-- name: wallets_reset_last_updated
-- last_updated of wallets $1 after identities were removed: the newest remaining observation, or
-- null when none remains.
UPDATE wallets w
   SET last_updated = (SELECT max(l.observed_at) FROM links l WHERE l.wallet = w.address)
 WHERE w.address = ANY ($1::text[])
