-- name: webhook_events_insert_job
-- The job.completed or job.failed event ($2) of job $1, written in the transaction that ends
-- the job, with a delivery for every enabled endpoint of its account subscribed to the type.
-- Nothing when no endpoint is. $4 is {base_url}. Returns the deliveries written.
WITH j AS (
  SELECT j.*, coalesce((SELECT sum(d.matches) FROM debits d
                         WHERE d.account_id = j.account_id AND d.call_key = 'job:' || j.id::text), 0)::integer AS billed
    FROM jobs j WHERE j.id = $1
), ev AS (
  INSERT INTO webhook_events (id, account_id, type, body, created_at)
  SELECT gen_random_uuid(), j.account_id, $2,
         json_build_object(
           'type', $2::text,
           'timestamp', to_char($3::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'data', json_build_object(
             'job_id', j.id,
             'status', j.status,
             'total', j.total,
             'processed', j.processed,
             'matched', j.matched,
             'billed_matches', j.billed,
             'created_at', to_char(j.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'completed_at', to_char(j.completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'results_url', $4::text || '/jobs/' || j.id::text))::text,
         $3
    FROM j
   WHERE EXISTS (SELECT 1 FROM webhook_endpoints e
                  WHERE e.account_id = j.account_id AND e.enabled AND e.deleted_at IS NULL AND $2 = ANY (e.events))
  RETURNING id, account_id
)
INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, created_at)
SELECT gen_random_uuid(), ev.id, e.id, $3, $3
  FROM ev
  JOIN webhook_endpoints e ON e.account_id = ev.account_id AND e.enabled AND e.deleted_at IS NULL AND $2 = ANY (e.events)
RETURNING id
