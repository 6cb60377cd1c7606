-- name: hub_sync_start_backfill
-- Starts a backfill of hub $2 by holder $1 at $4 that the follower will pick up after event $3
-- (the hub's newest when it started), and forgets the shards' progress of an earlier one, in one
-- statement. Only the lease holder can.
WITH cleared AS (DELETE FROM hub_shards)
UPDATE hub_sync
   SET hub_url = $2, start_event_id = $3::bigint, backfill_started_at = $4::timestamptz,
       backfill_done_at = NULL,
       head_event_id = greatest(head_event_id, $3::bigint), head_seen_at = $4::timestamptz
 WHERE name = 'farcaster' AND holder = $1::uuid
RETURNING name
