-- name: x402_payments_claim
-- Claims an authorization before it is settled. The unique replay key makes the claim atomic:
-- of any number of concurrent submissions of one payment exactly one gets a row back.
INSERT INTO x402_payments (id, network, asset, payer, nonce, signature, pay_to, amount, quantity,
                           topup_account, topup_prefix, state, claimed_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'claimed', $12)
    ON CONFLICT (network, asset, payer, nonce) DO NOTHING
RETURNING id
