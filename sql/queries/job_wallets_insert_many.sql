-- name: job_wallets_insert_many
-- A slice of the submission starting at position $3, one statement for thousands of rows.
INSERT INTO job_wallets (job_id, position, address)
SELECT $1, t.ord::integer - 1 + $3::integer, t.address
  FROM unnest($2::text[]) WITH ORDINALITY AS t (address, ord)
