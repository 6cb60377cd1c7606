-- name: x402_wallets_set_account
-- Gives a wallet the account its first keyless purchase created (the caller holds the row lock).
UPDATE x402_wallets SET account_id = $2 WHERE wallet = $1 AND account_id IS NULL
RETURNING account_id
