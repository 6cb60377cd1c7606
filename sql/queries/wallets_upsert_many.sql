-- name: wallets_upsert_many
-- $3 false: a line without its own observed_at never moves an existing wallet's check time,
-- so importing the same file twice changes nothing.
-- $4 is last_updated of a wallet this inserts (the newest of the links about to be written for it,
-- null for none); an existing wallet's is left to wallets_refresh_last_updated.
-- Returns the key of each row written, so an import can tell which of its lines changed something.
INSERT INTO wallets AS w (address, checked_at, last_updated)
SELECT * FROM unnest($1::text[], $2::timestamptz[], $4::timestamptz[])
    ON CONFLICT (address) DO UPDATE
   SET checked_at = excluded.checked_at
 WHERE $3 AND excluded.checked_at > w.checked_at
RETURNING (xmax = 0) AS inserted, address
