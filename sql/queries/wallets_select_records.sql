-- name: wallets_select_records
-- The identity rows of the given wallets (identity_rows in 00001_index.sql).
SELECT * FROM identity_rows($1::text[])
