-- name: job_wallet_slices_insert
-- The whole submission $2 in slices of $3 addresses, a row each, in one statement: position p is
-- element p + 1 of $2. A row per address cost an index entry and a foreign-key check each.
INSERT INTO job_wallet_slices (job_id, start, stop, addresses)
SELECT $1, s.start, least(s.start + $3::integer, cardinality($2::text[])), ($2::text[])[s.start + 1 : s.start + $3::integer]
  FROM generate_series(0, cardinality($2::text[]) - 1, $3::integer) AS s (start)
