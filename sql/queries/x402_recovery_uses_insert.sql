-- name: x402_recovery_uses_insert
-- Spends a recovery challenge; no row back means it was spent before.
INSERT INTO x402_recovery_uses (token_hash, wallet, used_at) VALUES ($1, $2, $3)
    ON CONFLICT (token_hash) DO NOTHING
RETURNING token_hash
