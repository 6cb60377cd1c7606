-- name: job_wallets_select_range
-- Wallets at positions [$2, $2 + $3): a worker's next chunk, or a page of results.
SELECT address
  FROM job_wallets
 WHERE job_id = $1 AND position >= $2 AND position < $2 + $3
 ORDER BY position
