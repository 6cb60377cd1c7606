-- name: watch_snapshots_upsert_many
-- Records what the wallets' records say now ($2: JSON text a wallet); $3 false keeps a
-- snapshot already there (a wallet another account watches already).
INSERT INTO watch_snapshots AS s (wallet, summary)
SELECT t.wallet, t.summary::jsonb FROM unnest($1::text[], $2::text[]) AS t (wallet, summary)
    ON CONFLICT (wallet) DO UPDATE SET summary = excluded.summary WHERE $3::boolean
