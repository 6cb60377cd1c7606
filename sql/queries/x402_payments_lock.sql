-- name: x402_payments_lock
-- A payment by its settlement reference, locked while its grant is written: a grant racing
-- an operator's redeem waits, then finds it granted.
SELECT id, state, reason, tx_hash, network, asset, payer, nonce, quantity, topup_account, topup_prefix,
       account_id, key_id, purchase_number, claimed_at, settled_at, granted_at
  FROM x402_payments
 WHERE id = $1
   FOR UPDATE
