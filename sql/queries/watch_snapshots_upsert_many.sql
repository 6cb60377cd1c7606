-- name: watch_snapshots_upsert_many
-- Records what the wallets' records say now ($1: JSON text, [[wallet, summary], ...]); $2 false
-- keeps a snapshot already there (a wallet another account watches already).
INSERT INTO watch_snapshots AS s (wallet, summary)
SELECT e->>0, (e->1)::jsonb FROM json_array_elements($1::text::json) AS e
    ON CONFLICT (wallet) DO UPDATE SET summary = excluded.summary WHERE $2::boolean
