-- name: hub_sync_advance
-- Records event $2 as the last applied by holder $1, in the transaction that applied it; only
-- forward, and only while the holder keeps the lease (nothing returned: the page must roll back).
UPDATE hub_sync
   SET last_event_id = greatest(coalesce(last_event_id, 0), $2::bigint),
       head_event_id = greatest(coalesce(head_event_id, 0), $2::bigint, $3::bigint),
       head_seen_at = $4::timestamptz
 WHERE name = 'farcaster' AND holder = $1::uuid
RETURNING last_event_id::text
