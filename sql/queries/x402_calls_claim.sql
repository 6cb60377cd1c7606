-- name: x402_calls_claim
-- Claims a paid call's payment before the call runs. The unique replay key makes the claim
-- atomic: of any number of concurrent submissions of one payment exactly one gets a row back.
INSERT INTO x402_calls (id, network, asset, payer, nonce, signature, pay_to, route, max_amount, state, claimed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'claimed', $10)
    ON CONFLICT (network, asset, payer, nonce) DO NOTHING
RETURNING id
