-- name: x402_calls_select_by_key
-- The claim on one signed payment, by its replay key (network, asset, payer, nonce).
SELECT id, state FROM x402_calls WHERE network = $1 AND asset = $2 AND payer = $3 AND nonce = $4
