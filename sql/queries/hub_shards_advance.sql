-- name: hub_shards_advance
-- Records a page of shard $1 written: the token of its next page $2 (empty with $5: the shard is
-- done), the last fid $3 and $4 more fids, in the transaction that wrote the page's observations.
-- Only from the page it was read at ($6), so a page written twice counts once.
UPDATE hub_shards
   SET page_token = $2, last_fid = greatest(last_fid, $3::bigint), fids_done = fids_done + $4::bigint, done = $5::boolean
 WHERE shard = $1 AND page_token = $6
RETURNING shard
