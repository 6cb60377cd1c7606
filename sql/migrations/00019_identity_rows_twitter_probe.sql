-- identity_rows (00001_index.sql) probes twitter_reachability for twitter links only.
--
-- Its join said `l.kind = 'twitter' AND tr.handle = l.value`. The planner keeps the kind test as
-- a join filter and descends the reachability index for every link: an ens name, a lens handle, a
-- github login, a fid's text. EXPLAIN (ANALYZE, BUFFERS) of 2,000 random wallets of the bench index
-- (2,692 links): 8,321 buffers on that index, 3.1 a link, of the lookup's 28,537; each a random leaf
-- page that is often a miss when shared_buffers is smaller than the index.
-- The reverse page's statement already joins on a handle that is null unless the link is a twitter
-- one: a null key matches nothing and the index is not descended. Here the same: 3,389 buffers on
-- that index for the same wallets, 23,605 in all (17% fewer), the same rows (md5 of the output equal).
-- Every caller (the lookups, meter_call, meter_calls, a job's results) inlines it, so its plans
-- are made again with this body.
CREATE OR REPLACE FUNCTION identity_rows(p_addresses text[])
RETURNS TABLE (
  address text, last_updated timestamptz, checked_at timestamptz,
  kind text, value text, route text, class text, self_declared boolean, detail jsonb,
  observed_at timestamptz, fid float8, fc_username text, fc_followers integer,
  reachability text, reachability_checked_at timestamptz)
LANGUAGE sql STABLE AS $$
  SELECT w.address, w.last_updated, w.checked_at,
         l.kind, l.value, l.route, r.class,
         (l.self_declared OR coalesce(r.self_declared, false)),
         l.detail, l.observed_at, l.fid::float8,
         fa.username, fa.followers,
         tr.reachability, tr.checked_at
    FROM wallets w
    LEFT JOIN links l ON l.wallet = w.address
    LEFT JOIN evidence_routes r ON r.route = l.route
    LEFT JOIN farcaster_accounts fa ON fa.fid = l.fid
    LEFT JOIN twitter_reachability tr ON tr.handle = CASE WHEN l.kind = 'twitter' THEN l.value END
   WHERE w.address = ANY (p_addresses)
$$;
