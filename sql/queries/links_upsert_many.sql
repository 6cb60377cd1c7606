-- name: links_upsert_many
-- One row per (wallet, kind, value, route). An identical line changes nothing; a line with a
-- newer explicit observed_at ($9) moves the observation time forward.
-- Returns the key of each row written, so an import can tell which of its lines changed something.
INSERT INTO links AS l (wallet, kind, value, route, fid, self_declared, detail, observed_at)
SELECT t.wallet, t.kind, t.value, t.route, t.fid, t.self_declared, t.detail::jsonb, t.observed_at
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::boolean[],
              $7::text[], $8::timestamptz[])
       AS t (wallet, kind, value, route, fid, self_declared, detail, observed_at)
    ON CONFLICT (wallet, kind, value, route) DO UPDATE
   SET self_declared = excluded.self_declared,
       detail = excluded.detail,
       observed_at = greatest(l.observed_at, excluded.observed_at)
 WHERE l.self_declared IS DISTINCT FROM excluded.self_declared
    OR l.detail IS DISTINCT FROM excluded.detail
    OR ($9 AND excluded.observed_at > l.observed_at)
RETURNING (xmax = 0) AS inserted, wallet, kind, value, route
