-- name: hub_shards_ensure
-- The shards $1 of a backfill, each from its first page unless it has progress already.
INSERT INTO hub_shards (shard) SELECT unnest($1::integer[]) ON CONFLICT (shard) DO NOTHING
