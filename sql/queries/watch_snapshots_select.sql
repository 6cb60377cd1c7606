-- name: watch_snapshots_select
-- What the given watched wallets' records said when last compared, locked until this pass commits.
-- An opted-out wallet is left out: it changes nothing a watcher can see (00021_opt_outs.sql), and
-- its snapshot is kept for the day it is restored.
SELECT s.wallet, s.summary
FROM watch_snapshots s
WHERE s.wallet = ANY ($1::text[])
  AND NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = s.wallet)
ORDER BY s.wallet
FOR UPDATE OF s
