-- name: x402_payments_mark_granted
UPDATE x402_payments
   SET state = 'granted', account_id = $2, key_id = $3, purchase_number = $4, granted_at = $5,
       tx_hash = coalesce($6, tx_hash), settled_at = coalesce(settled_at, $5)
 WHERE id = $1 AND state <> 'granted'
RETURNING id
