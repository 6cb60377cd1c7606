-- name: farcaster_accounts_upsert_many
-- The newest observation of an fid decides its username and follower count.
-- Returns the key of each row written, so an import can tell which of its lines changed something.
INSERT INTO farcaster_accounts AS f (fid, username, followers, updated_at)
SELECT * FROM unnest($1::bigint[], $2::text[], $3::integer[], $4::timestamptz[])
    ON CONFLICT (fid) DO UPDATE
   SET username = excluded.username,
       followers = coalesce(excluded.followers, f.followers),
       updated_at = excluded.updated_at
 WHERE excluded.updated_at >= f.updated_at
   AND (f.username, f.followers) IS DISTINCT FROM (excluded.username, coalesce(excluded.followers, f.followers))
RETURNING (xmax = 0) AS inserted, fid::text AS fid
