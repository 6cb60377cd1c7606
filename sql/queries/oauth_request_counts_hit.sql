-- name: oauth_request_counts_hit
-- Counts one request in the fixed window of $3 seconds containing $2 for bucket $1, and
-- returns the count and the window's start. One statement, so concurrent requests (and
-- processes) count exactly: the row lock orders them.
INSERT INTO oauth_request_counts AS r (bucket, window_start, used)
VALUES ($1, to_timestamp(floor(extract(epoch FROM $2::timestamptz) / $3) * $3), 1)
    ON CONFLICT (bucket) DO UPDATE
   SET used = CASE WHEN r.window_start = excluded.window_start THEN r.used + 1 ELSE 1 END,
       window_start = excluded.window_start
RETURNING used, window_start
