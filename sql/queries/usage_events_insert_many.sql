-- name: usage_events_insert_many
-- Usage events are buffered in the server and written many at a time, off the request path.
INSERT INTO usage_events (account_id, key_id, route, status, latency_ms, units, wallets, matches, created_at)
SELECT *
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::smallint[], $5::real[], $6::integer[],
              $7::integer[], $8::integer[], $9::timestamptz[])
