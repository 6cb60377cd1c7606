-- name: hub_shards_select
-- The backfill's progress, shard by shard.
SELECT shard, page_token, last_fid::text, fids_done::text, done FROM hub_shards ORDER BY shard
