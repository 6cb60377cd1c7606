-- name: usage_counts_upsert_many
-- Usage counters aggregated in the server per (account, key, route, status, minute) and added in
-- one statement: the rows of a flush are distinct keys, so each target row is updated once, and
-- they are written in primary-key order, so two processes adding to the same rows never deadlock.
INSERT INTO usage_counts AS u (account_id, key_id, route, status, minute, requests, units, wallets, matches, latency_ms_sum)
SELECT *
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::smallint[], $5::timestamptz[], $6::integer[],
              $7::bigint[], $8::bigint[], $9::bigint[], $10::float8[])
 ORDER BY 1, 5, 2, 3, 4
    ON CONFLICT (account_id, minute, key_id, route, status) DO UPDATE
   SET requests = u.requests + excluded.requests,
       units = u.units + excluded.units,
       wallets = u.wallets + excluded.wallets,
       matches = u.matches + excluded.matches,
       latency_ms_sum = u.latency_ms_sum + excluded.latency_ms_sum
