-- name: links_select_found_wallets
-- Which of the given wallets the index holds any identity for (the job's index stage).
SELECT DISTINCT wallet
  FROM links
 WHERE wallet = ANY ($1::text[])
