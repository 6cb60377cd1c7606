-- name: hub_shards_select_metrics
-- /metrics: the backfill's fids written and shards done, and the follower's place against the hub's head.
SELECT (SELECT coalesce(sum(fids_done), 0)::float8 FROM hub_shards) AS fids_done,
       (SELECT count(*) FILTER (WHERE done)::float8 FROM hub_shards) AS shards_done,
       (SELECT count(*)::float8 FROM hub_shards) AS shards,
       s.last_event_id::float8 AS last_event_id,
       s.head_event_id::float8 AS head_event_id,
       (s.backfill_done_at IS NOT NULL) AS backfill_done
  FROM hub_sync s WHERE s.name = 'farcaster'
