-- watch_events_create with less work for the same result (00027_watch_events_bulk.sql): an import
-- that changes 10,000 watched wallets spent a second in it. The pass's wallets now come as an array
-- of their own ($1), so that locking the accounts no longer parses the whole events JSON (about
-- 100 ms for 10,000 bodies) before the events parse it again; and the function runs with 64 MB of
-- work_mem, so that its sort and hash of the events' bodies (11 MB for 10,000) stay in memory
-- instead of spilling to disk at the default 4 MB.
DROP FUNCTION watch_events_create(text, timestamptz);
CREATE FUNCTION watch_events_create(p_wallets text[], p_events text, p_now timestamptz)
RETURNS integer LANGUAGE plpgsql SET work_mem = '64MB' AS $$
DECLARE
  v_written integer;
BEGIN
  -- the metered accounts these events may debit, locked in one order (as debit_matches locks one)
  PERFORM pg_advisory_xact_lock(hashtextextended(t.account_id::text, 7201))
     FROM (SELECT DISTINCT w.account_id
             FROM watched_wallets w JOIN accounts a ON a.id = w.account_id
            WHERE w.wallet = ANY (p_wallets) AND NOT a.unmetered
            ORDER BY w.account_id) t;

  WITH ev AS (
    SELECT w.account_id, c.wallet, c.full_body, c.withheld_body, c.billable AND NOT a.unmetered AS billed,
           a.free_allowance, gen_random_uuid() AS id
      FROM (SELECT e->>0 AS wallet, e->>1 AS full_body, e->>2 AS withheld_body, (e->>3)::boolean AS billable
              FROM json_array_elements(p_events::json) AS e) c
      JOIN watched_wallets w ON w.wallet = c.wallet
      JOIN accounts a ON a.id = w.account_id
     WHERE EXISTS (SELECT 1 FROM webhook_endpoints e
                    WHERE e.account_id = w.account_id AND e.enabled AND e.deleted_at IS NULL
                      AND 'wallet.changed' = ANY (e.events))
  ), ranked AS (
    -- k: the place of a billed event among its account's billed events
    SELECT ev.*, CASE WHEN ev.billed THEN row_number() OVER (PARTITION BY ev.account_id, ev.billed ORDER BY ev.wallet) END AS k
      FROM ev
  ), billed_accounts AS (
    SELECT DISTINCT account_id, free_allowance FROM ev WHERE billed
  ), grants AS (
    -- the unexpired packs with credits left, by expiry: each covers the billed places (upto - left, upto]
    SELECT g.account_id, g.id, g.drawn, g.matches - g.drawn AS left_,
           sum(g.matches - g.drawn) OVER (PARTITION BY g.account_id ORDER BY g.expires_at, g.id) AS upto
      FROM (SELECT cg.account_id, cg.id, cg.matches, cg.expires_at, coalesce(d.drawn_after, 0) AS drawn
              FROM credit_grants cg
              LEFT JOIN LATERAL (
                SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1
              ) d ON true
             WHERE cg.account_id IN (SELECT account_id FROM billed_accounts) AND cg.expires_at > p_now) g
     WHERE g.matches > g.drawn
  ), standing AS (
    -- what the packs hold in all (an overdrawn pack counts against it, as account_standing does),
    -- and the free allowance left once they are spent
    SELECT b.account_id,
           greatest(coalesce((SELECT sum(cg.matches - coalesce((SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1), 0))
                                FROM credit_grants cg WHERE cg.account_id = b.account_id AND cg.expires_at > p_now), 0), 0) AS pack,
           CASE WHEN b.free_allowance
                THEN greatest(100 - coalesce((SELECT sum(x.matches) FROM debits x
                                                WHERE x.account_id = b.account_id AND x.source = 'free'
                                                  AND x.created_at > p_now - interval '30 days'), 0), 0)
                ELSE 0 END AS free
      FROM billed_accounts b
  ), placed AS (
    SELECT r.id, r.account_id, r.full_body, r.withheld_body, r.k,
           CASE WHEN NOT r.billed THEN 'unbilled'
                WHEN r.k <= s.pack AND g.id IS NOT NULL THEN 'pack'
                WHEN r.k > s.pack AND r.k - s.pack <= s.free THEN 'free'
                ELSE 'withheld' END AS how,
           g.id AS grant_id, g.drawn + (r.k - (g.upto - g.left_)) AS drawn_after
      FROM ranked r
      LEFT JOIN standing s ON s.account_id = r.account_id
      LEFT JOIN grants g ON r.billed AND g.account_id = r.account_id AND r.k > g.upto - g.left_ AND r.k <= g.upto
  ), debited AS (
    INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
    SELECT p.account_id, 'event:' || p.id::text, 0,
           CASE WHEN p.how = 'pack' THEN p.grant_id END, p.how, 1,
           CASE WHEN p.how = 'pack' THEN p.drawn_after END, p_now
      FROM placed p WHERE p.how IN ('pack', 'free')
  ), written AS (
    INSERT INTO webhook_events (id, account_id, type, body, created_at)
    SELECT p.id, p.account_id, 'wallet.changed', CASE WHEN p.how = 'withheld' THEN p.withheld_body ELSE p.full_body END, p_now
      FROM placed p
    RETURNING id, account_id
  ), delivered AS (
    INSERT INTO webhook_deliveries (id, event_id, endpoint_id, next_attempt_at, created_at)
    SELECT gen_random_uuid(), wr.id, e.id, p_now, p_now
      FROM written wr
      JOIN webhook_endpoints e ON e.account_id = wr.account_id AND e.enabled AND e.deleted_at IS NULL
                              AND 'wallet.changed' = ANY (e.events)
  )
  SELECT count(*) INTO v_written FROM written;
  RETURN v_written;
END $$;
