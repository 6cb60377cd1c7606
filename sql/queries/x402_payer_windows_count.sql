-- name: x402_payer_windows_count
-- Counts a paid call's rate units against its paying wallet (x402_payer_count in 00023_x402_calls.sql).
SELECT * FROM x402_payer_count($1, $2, $3, $4)
