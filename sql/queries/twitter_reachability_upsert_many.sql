-- name: twitter_reachability_upsert_many
-- A newer check replaces an older one; an older or repeated one changes nothing.
-- Returns the key of each row written, so an import can tell which of its lines changed something.
INSERT INTO twitter_reachability AS r (handle, reachability, checked_at)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
    ON CONFLICT (handle) DO UPDATE
   SET reachability = excluded.reachability, checked_at = excluded.checked_at
 WHERE excluded.checked_at > r.checked_at
RETURNING (xmax = 0) AS inserted, handle
