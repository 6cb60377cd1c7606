-- Metering in the database: one call verifies a key, reads the plan and balance, counts the
-- rate windows and debits matches, so a metered request costs one round trip.

-- Credits available to an account at p_now, derived from the ledger: the unexpired packs'
-- grants minus what their debits drew (read from each pack's newest running total), else the
-- free allowance of an email account (100 per rolling 30 days). One statement, so callers can
-- join it in (meter_call) and the planner inlines it.
CREATE FUNCTION account_credits(p_account uuid, p_now timestamptz)
RETURNS TABLE (available integer, pack_available integer, on_free_allowance boolean,
               free_resets_at timestamptz, plan text)
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN s.pack > 0 THEN s.pack
              WHEN a.free_allowance THEN greatest(100 - f.used, 0)
              ELSE greatest(s.pack, 0) END,
         s.pack,
         s.pack <= 0 AND a.free_allowance,
         CASE WHEN s.pack <= 0 AND a.free_allowance THEN f.first_at + interval '30 days' END,
         -- the strongest preset among unexpired packs, exhausted or not
         coalesce(a.plan_override, s.plan, 'Developer')
    FROM accounts a
   CROSS JOIN LATERAL (
         SELECT coalesce(sum(g.matches - coalesce(d.drawn_after, 0)), 0)::integer AS pack,
                (array_agg(p.plan ORDER BY pl.rank DESC))[1] AS plan
           FROM credit_grants g
           JOIN packs p ON p.name = g.pack
           JOIN plans pl ON pl.name = p.plan
           LEFT JOIN LATERAL (
                SELECT x.drawn_after FROM debits x WHERE x.grant_id = g.id ORDER BY x.drawn_after DESC LIMIT 1
           ) d ON true
          WHERE g.account_id = a.id AND g.expires_at > p_now) s
   CROSS JOIN LATERAL (
         SELECT coalesce(sum(x.matches), 0)::integer AS used, min(x.created_at) AS first_at
           FROM debits x
          WHERE a.free_allowance AND s.pack <= 0
            AND x.account_id = a.id AND x.source = 'free' AND x.created_at > p_now - interval '30 days') f
   WHERE a.id = p_account
$$;

-- Debits p_matches from the account, earliest-expiring pack first, keyed on p_call_key.
-- Returns false when the key was already debited (a retry) or there is nothing to debit.
-- A call may overdraw: what no pack covers goes to the free allowance (email accounts),
-- else to the pack that expires last, else is recorded unfunded.
CREATE FUNCTION debit_matches(p_account uuid, p_call_key text, p_matches integer, p_now timestamptz)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_left integer := p_matches;
  v_part smallint := 0;
  v_take integer;
  v_free boolean;
  g record;
BEGIN
  IF p_matches <= 0 THEN
    RETURN false;
  END IF;
  -- one debit at a time per account keeps the running totals exact; an advisory lock
  -- serializes them without writing a row lock into the accounts tuple
  PERFORM pg_advisory_xact_lock(hashtextextended(p_account::text, 7201));

  -- The common case in one statement: the earliest-expiring pack with credits left covers the
  -- whole debit. A retry of the same call key conflicts and writes nothing.
  INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
  SELECT p_account, p_call_key, 0, fp.id, 'pack', p_matches, fp.drawn + p_matches, p_now
    FROM (SELECT cg.id, cg.matches, coalesce(d.drawn_after, 0) AS drawn
            FROM credit_grants cg
            LEFT JOIN LATERAL (
              SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1
            ) d ON true
           WHERE cg.account_id = p_account AND cg.expires_at > p_now
             AND cg.matches > coalesce(d.drawn_after, 0)
           ORDER BY cg.expires_at, cg.id
           LIMIT 1) fp
   WHERE fp.matches - fp.drawn >= p_matches
      ON CONFLICT (account_id, call_key, part) DO NOTHING;
  IF FOUND THEN
    RETURN true;
  END IF;

  IF EXISTS (SELECT 1 FROM debits x WHERE x.account_id = p_account AND x.call_key = p_call_key) THEN
    RETURN false;
  END IF;
  SELECT a.free_allowance INTO v_free FROM accounts a WHERE a.id = p_account;

  -- Otherwise: split across packs, then overdraw.
  FOR g IN
    SELECT cg.id, cg.matches, coalesce(d.drawn_after, 0) AS drawn
      FROM credit_grants cg
      LEFT JOIN LATERAL (
        SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1
      ) d ON true
     WHERE cg.account_id = p_account AND cg.expires_at > p_now
     ORDER BY cg.expires_at, cg.id
  LOOP
    EXIT WHEN v_left = 0;
    v_take := least(v_left, g.matches - g.drawn);
    CONTINUE WHEN v_take <= 0;
    INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
    VALUES (p_account, p_call_key, v_part, g.id, 'pack', v_take, g.drawn + v_take, p_now);
    v_part := v_part + 1;
    v_left := v_left - v_take;
  END LOOP;

  IF v_left > 0 THEN
    IF v_free THEN
      INSERT INTO debits (account_id, call_key, part, source, matches, created_at)
      VALUES (p_account, p_call_key, v_part, 'free', v_left, p_now);
    ELSE
      SELECT cg.id, coalesce(d.drawn_after, 0) AS drawn INTO g
        FROM credit_grants cg
        LEFT JOIN LATERAL (
          SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1
        ) d ON true
       WHERE cg.account_id = p_account AND cg.expires_at > p_now
       ORDER BY cg.expires_at DESC, cg.id DESC LIMIT 1;
      IF FOUND THEN
        INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
        VALUES (p_account, p_call_key, v_part, g.id, 'pack', v_left, g.drawn + v_left, p_now);
      ELSE
        INSERT INTO debits (account_id, call_key, part, source, matches, created_at)
        VALUES (p_account, p_call_key, v_part, 'unfunded', v_left, p_now);
      END IF;
    END IF;
  END IF;
  RETURN true;
END $$;

-- The whole metering step of an authenticated request, in one round trip.
-- outcome: unauthorized | replay | batch_too_large | rate_limited | no_credits | ok
-- Nothing is counted or debited unless the outcome is ok.
CREATE FUNCTION meter_call(
  p_key_hash text, p_now timestamptz, p_weight integer, p_needs_credits boolean,
  p_list_size integer, p_call_key text, p_bill_wallets text[], p_idem_key text)
RETURNS TABLE (
  outcome text, key_id uuid, account_id uuid, account_bound boolean, plan text,
  limit_minute integer, limit_day integer, limit_month integer, max_batch_size integer,
  used_minute integer, used_day integer, used_month integer,
  available integer, unmetered boolean, matched integer, billed boolean,
  idem_request_hash text, idem_status integer, idem_body text)
LANGUAGE plpgsql ROWS 1 AS $$
#variable_conflict use_column
DECLARE
  k record;
  w record;
  v_counted boolean := false;
  v_minute timestamptz := date_trunc('minute', p_now, 'UTC');
  v_day timestamptz := date_trunc('day', p_now, 'UTC');
  v_month timestamptz := date_trunc('month', p_now, 'UTC');
BEGIN
  -- Every call of one account waits on its rate_windows row until the previous call commits.
  -- Committing without waiting for the WAL flush keeps that wait short; a database crash can
  -- then lose the last fraction of a second of counts and debits (those calls go unbilled),
  -- and never applies anything twice or in part.
  PERFORM set_config('synchronous_commit', 'off', true);

  -- the key, its account, balance and plan limits in one statement
  SELECT ak.id, ak.account_id, ak.last_used_at, a.has_account, a.unmetered, c.available, c.plan,
         pl.requests_per_minute, pl.requests_per_day, pl.requests_per_month, pl.max_batch_size
    INTO k
    FROM api_keys ak
    JOIN accounts a ON a.id = ak.account_id
   CROSS JOIN LATERAL account_credits(ak.account_id, p_now) c
    JOIN plans pl ON pl.name = c.plan
   WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL;
  IF NOT FOUND THEN
    outcome := 'unauthorized';
    RETURN NEXT;
    RETURN;
  END IF;

  key_id := k.id;
  account_id := k.account_id;
  account_bound := k.has_account;
  unmetered := k.unmetered;
  available := CASE WHEN k.unmetered THEN NULL ELSE k.available END;
  plan := k.plan;
  limit_minute := k.requests_per_minute;
  limit_day := k.requests_per_day;
  limit_month := k.requests_per_month;
  max_batch_size := k.max_batch_size;
  matched := 0;
  billed := false;

  IF p_idem_key IS NOT NULL THEN
    SELECT ir.request_hash, ir.status, ir.body INTO idem_request_hash, idem_status, idem_body
      FROM idempotent_responses ir
     WHERE ir.account_id = k.account_id AND ir.idem_key = p_idem_key
       AND ir.created_at > p_now - interval '24 hours';
    IF FOUND THEN
      SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = k.account_id;
      used_minute := CASE WHEN w.minute_start = v_minute THEN w.minute_used ELSE 0 END;
      used_day := CASE WHEN w.day_start = v_day THEN w.day_used ELSE 0 END;
      used_month := CASE WHEN w.month_start = v_month THEN w.month_used ELSE 0 END;
      outcome := 'replay';
      RETURN NEXT;
      RETURN;
    END IF;
  END IF;

  -- the billable predicate x_or_farcaster over the deduplicated list, read before any row
  -- lock is taken so the locks are held only for the writes
  IF p_bill_wallets IS NOT NULL AND cardinality(p_bill_wallets) > 0 THEN
    SELECT count(DISTINCT l.wallet)::integer INTO matched
      FROM links l
     WHERE l.wallet = ANY (p_bill_wallets) AND l.kind IN ('twitter', 'farcaster');
  END IF;

  -- Fast path, the common case: a list within the plan, credits left, and room in every
  -- window. One UPDATE counts the call only where all three windows have room; its WHERE is
  -- re-checked on the newest row version after the row lock, so counting stays atomic.
  IF p_weight > 0
     AND (p_list_size IS NULL OR k.max_batch_size IS NULL OR p_list_size <= k.max_batch_size)
     AND NOT (p_needs_credits AND NOT k.unmetered AND k.available <= 0) THEN
    UPDATE rate_windows rw
       SET minute_start = v_minute,
           minute_used = CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END + p_weight,
           day_start = v_day,
           day_used = CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END + p_weight,
           month_start = v_month,
           month_used = CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END + p_weight
     WHERE rw.account_id = k.account_id
       AND CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END + p_weight <= coalesce(k.requests_per_minute, 2147483647)
       AND CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END + p_weight <= coalesce(k.requests_per_day, 2147483647)
       AND CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END + p_weight <= coalesce(k.requests_per_month, 2147483647)
    RETURNING rw.minute_used, rw.day_used, rw.month_used INTO used_minute, used_day, used_month;
    v_counted := FOUND;
  END IF;

  IF NOT v_counted THEN
    -- Slow path: a first call, a refusal or a weightless call, decided under the row lock.
    IF p_weight > 0 THEN
      INSERT INTO rate_windows AS rw (account_id, minute_start, minute_used, day_start, day_used, month_start, month_used)
      VALUES (k.account_id, v_minute, 0, v_day, 0, v_month, 0)
      ON CONFLICT (account_id) DO NOTHING;
      SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = k.account_id FOR UPDATE;
    ELSE
      SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = k.account_id;
    END IF;
    used_minute := CASE WHEN w.minute_start = v_minute THEN w.minute_used ELSE 0 END;
    used_day := CASE WHEN w.day_start = v_day THEN w.day_used ELSE 0 END;
    used_month := CASE WHEN w.month_start = v_month THEN w.month_used ELSE 0 END;

    IF p_list_size IS NOT NULL AND k.max_batch_size IS NOT NULL AND p_list_size > k.max_batch_size THEN
      outcome := 'batch_too_large';
      matched := 0;
      RETURN NEXT;
      RETURN;
    END IF;

    IF p_weight > 0 AND (used_minute + p_weight > limit_minute
                      OR used_day + p_weight > limit_day
                      OR used_month + p_weight > limit_month) THEN
      outcome := 'rate_limited';
      matched := 0;
      RETURN NEXT;
      RETURN;
    END IF;

    IF p_needs_credits AND NOT k.unmetered AND k.available <= 0 THEN
      outcome := 'no_credits';
      matched := 0;
      RETURN NEXT;
      RETURN;
    END IF;

    IF p_weight > 0 THEN
      used_minute := used_minute + p_weight;
      used_day := used_day + p_weight;
      used_month := used_month + p_weight;
      UPDATE rate_windows rw
         SET minute_start = v_minute, minute_used = used_minute,
             day_start = v_day, day_used = used_day,
             month_start = v_month, month_used = used_month
       WHERE rw.account_id = k.account_id;
    END IF;
  END IF;

  IF matched > 0 AND NOT k.unmetered THEN
    billed := debit_matches(k.account_id, p_call_key, matched, p_now);
  END IF;

  -- last_used_at is kept to the minute: writing it on every call would cost a row update each
  IF k.last_used_at IS NULL OR k.last_used_at < p_now - interval '1 minute' THEN
    UPDATE api_keys SET last_used_at = p_now WHERE api_keys.id = k.id;
  END IF;

  outcome := 'ok';
  RETURN NEXT;
END $$;
