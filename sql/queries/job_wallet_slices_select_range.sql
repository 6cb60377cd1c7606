-- name: job_wallet_slices_select_range
-- Wallets at positions [$2, $2 + $3): a worker's next chunk, or a page of results. Only the
-- slices overlapping the range are read (stop is a column, so no other slice's array is opened).
SELECT w.address
  FROM job_wallet_slices s, unnest(s.addresses) WITH ORDINALITY AS w (address, n)
 WHERE s.job_id = $1 AND s.start < $2::integer + $3::integer AND s.stop > $2::integer
   AND s.start + w.n - 1 >= $2::integer AND s.start + w.n - 1 < $2::integer + $3::integer
 ORDER BY s.start, w.n
