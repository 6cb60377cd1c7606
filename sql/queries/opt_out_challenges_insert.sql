-- name: opt_out_challenges_insert
-- Stores a challenge a wallet may sign once (00021_opt_outs.sql): nonce $1, wallet $2, action $3,
-- the message exactly as returned $4, issued at $5, expiring at $6.
INSERT INTO opt_out_challenges (nonce, wallet, action, message, issued_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
