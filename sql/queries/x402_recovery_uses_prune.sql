-- name: x402_recovery_uses_prune
-- Forgets spent challenges that have expired anyway (they are refused as expired).
DELETE FROM x402_recovery_uses WHERE used_at < $1
