-- name: hub_sync_acquire
-- Takes the hub lease for holder $1 at $2 until $3, in one statement so two processes racing for
-- it cannot both win: only a row with no unexpired lease (or one this holder already has) matches.
-- Returns the sync state when taken, nothing otherwise.
UPDATE hub_sync
   SET holder = $1::uuid, lease_until = $3::timestamptz
 WHERE name = 'farcaster'
   AND (lease_until IS NULL OR lease_until <= $2::timestamptz OR holder = $1::uuid)
RETURNING start_event_id::text, backfill_started_at, backfill_done_at, last_event_id::text, hub_url
