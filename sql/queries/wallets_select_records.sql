-- name: wallets_select_records
-- Every identity row of the given wallets with its evidence class, farcaster account and
-- twitter reachability joined in, so a lookup of any size is one statement. A wallet with
-- nothing attached comes back as one row with null link columns (checked-empty).
SELECT w.address, w.last_updated, w.checked_at,
       l.kind, l.value, l.route, r.class,
       (l.self_declared OR coalesce(r.self_declared, false)) AS self_declared,
       l.detail, l.observed_at, l.fid::float8 AS fid,
       fa.username AS fc_username, fa.followers AS fc_followers,
       tr.reachability, tr.checked_at AS reachability_checked_at
  FROM wallets w
  LEFT JOIN links l ON l.wallet = w.address
  LEFT JOIN evidence_routes r ON r.route = l.route
  LEFT JOIN farcaster_accounts fa ON fa.fid = l.fid
  LEFT JOIN twitter_reachability tr ON l.kind = 'twitter' AND tr.handle = l.value
 WHERE w.address = ANY ($1::text[])
