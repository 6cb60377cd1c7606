-- name: x402_payments_select_by_key
-- The claim on one signed authorization, by its replay key (network, asset, payer, nonce).
SELECT p.id, p.state, p.reason, p.tx_hash, p.signature, p.quantity, p.topup_prefix, p.account_id,
       p.network, p.asset, p.payer, p.nonce
  FROM x402_payments p
 WHERE p.network = $1 AND p.asset = $2 AND p.payer = $3 AND p.nonce = $4
