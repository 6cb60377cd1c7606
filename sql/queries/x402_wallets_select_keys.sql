-- name: x402_wallets_select_keys
-- A paying wallet's own account and how many active keys it holds (at most three).
SELECT w.account_id,
       (SELECT count(*)::integer FROM api_keys k WHERE k.account_id = w.account_id AND k.revoked_at IS NULL) AS active_keys
  FROM x402_wallets w
 WHERE w.wallet = $1 AND w.account_id IS NOT NULL
