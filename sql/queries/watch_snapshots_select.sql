-- name: watch_snapshots_select
-- What the given watched wallets' records said when last compared, locked until this pass commits.
SELECT wallet, summary FROM watch_snapshots WHERE wallet = ANY ($1::text[]) ORDER BY wallet FOR UPDATE
