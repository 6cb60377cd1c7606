-- name: x402_payments_select_by_id
-- The claim on one signed authorization, by its settlement reference.
SELECT p.id, p.state, p.reason, p.tx_hash, p.signature, p.quantity, p.topup_prefix, p.account_id,
       p.network, p.asset, p.payer, p.nonce
  FROM x402_payments p
 WHERE p.id = $1
