-- name: wallets_count
SELECT count(*)::integer AS wallets FROM wallets
