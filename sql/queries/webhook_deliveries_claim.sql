-- name: webhook_deliveries_claim
-- Claims up to $4 due deliveries for process $1 until $2 + $3 seconds, at most $5 of any one
-- endpoint and none of the endpoints in $6 (those this process has enough of in flight), with
-- what sending them needs. SKIP LOCKED lets several processes claim at once, and status and lease
-- are re-checked on the locked, newest row version, so one attempt is never sent by two.
-- A delivery whose process died is claimed again when its lease runs out.
WITH due AS (
  SELECT c.id, c.endpoint_id, c.next_attempt_at
    FROM webhook_deliveries c
   WHERE c.status = 'pending' AND c.next_attempt_at <= $2::timestamptz
     AND (c.lease_expires_at IS NULL OR c.lease_expires_at < $2::timestamptz)
     AND c.endpoint_id <> ALL ($6::uuid[])
     AND EXISTS (SELECT 1 FROM webhook_endpoints ep WHERE ep.id = c.endpoint_id AND ep.enabled)
   ORDER BY c.next_attempt_at
   LIMIT $4 * 4
), ranked AS (
  SELECT id FROM (SELECT due.id, row_number() OVER (PARTITION BY due.endpoint_id ORDER BY due.next_attempt_at) AS n FROM due) r
   WHERE r.n <= $5
), locked AS (
  -- by primary key only: on a queue table the statistics often say nothing is pending (the last
  -- ANALYZE saw every delivery done), and plans through the pending index then walked every
  -- pending row once per ranked one. A row locked here is returned as its newest version, so
  -- `fresh` re-checks status and lease on it: a row another process claimed or finished
  -- meanwhile is left alone, and one attempt is never sent by two
  SELECT d.id, d.status, d.lease_expires_at FROM webhook_deliveries d
   WHERE d.id = ANY (ARRAY(SELECT id FROM ranked))
   ORDER BY d.next_attempt_at
   LIMIT $4
     FOR UPDATE SKIP LOCKED
), fresh AS (
  SELECT l.id FROM locked l
   WHERE l.status = 'pending' AND (l.lease_expires_at IS NULL OR l.lease_expires_at < $2::timestamptz)
), claimed AS (
  UPDATE webhook_deliveries d
     SET lease_owner = $1, lease_expires_at = $2::timestamptz + make_interval(secs => $3::integer), attempts = d.attempts + 1
    FROM fresh WHERE d.id = fresh.id
  RETURNING d.id, d.event_id, d.endpoint_id, d.attempts
)
SELECT c.id, c.event_id, c.endpoint_id, c.attempts, ev.body, ep.url, ep.secret_enc, ep.previous_secret_enc, ep.previous_until
  FROM claimed c
  JOIN webhook_events ev ON ev.id = c.event_id
  JOIN webhook_endpoints ep ON ep.id = c.endpoint_id
