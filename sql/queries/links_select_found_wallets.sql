-- name: links_select_found_wallets
-- Which of the given wallets the index holds any identity for (the job's index stage), and
-- whether one of them is twitter or farcaster: what the job bills (jobs_checkpoint). Both read
-- from the primary key alone, whose columns begin with wallet and kind.
SELECT wallet, bool_or(kind IN ('twitter', 'farcaster')) AS matched
  FROM links
 WHERE wallet = ANY ($1::text[])
 GROUP BY wallet
