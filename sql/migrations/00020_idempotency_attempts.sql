-- An Idempotency-Key is billed at most once in its 24 hours, whatever happens between its
-- attempts. The debit of an idempotent call is keyed on the key and the start of its attempt
-- (`batch-idem:<key>@<start>`), and that start lives only in the key's idempotent_responses row.
-- Until now a refused call (429, 402, 400) and a call that failed after metering deleted that
-- row to give its claim back; when the attempt had already debited (a takeover of a crashed
-- call's claim, refused by the rate window; a failure after the debit committed), the next retry
-- claimed afresh with a new start, hence a new debit key, and was billed again.
--
-- The choice: a claim row is never deleted while its key counts. Giving a claim back clears its
-- token (claim_token and claimed_until NULL: free to take over at once, whatever the clocks of
-- the processes say) and keeps the attempt's start and request hash, so every later attempt of
-- the same request reproduces the same debit key and debit_matches finds the debit already made.
-- The fact of the debit stays where it was written, in `debits`; the row only has to remember
-- which key a retry must reproduce. (Keeping a separate "billed" table instead would duplicate
-- what `debits` already records.)
--
-- A different request body under a key whose attempt has debited is refused as a reuse of the
-- key (409), never answered on the first body's payment; under a key whose attempt debited
-- nothing, the new body starts a new attempt.

-- The whole metering step of an authenticated request, in one round trip.
-- outcome: unauthorized | replay | in_flight | batch_too_large | rate_limited | no_credits | ok
-- Nothing is counted or debited unless the outcome is ok. With p_idem_key, ok means this call
-- now holds the key's claim under p_idem_token for p_claim_seconds; in_flight means another
-- request holds it (ask again shortly); replay returns the stored response, or, for another
-- body under a key whose attempt has debited, the key's request hash with no response (the
-- caller compares the hashes and refuses the reuse).
CREATE OR REPLACE FUNCTION meter_call(
  p_key_hash text, p_now timestamptz, p_weight integer, p_needs_credits boolean,
  p_list_size integer, p_call_key text, p_bill_wallets text[], p_idem_key text,
  p_idem_hash text, p_idem_token text, p_claim_seconds integer)
RETURNS TABLE (
  outcome text, key_id uuid, account_id uuid, account_bound boolean, plan text,
  limit_minute integer, limit_day integer, limit_month integer, max_batch_size integer,
  used_minute integer, used_day integer, used_month integer,
  available integer, unmetered boolean, matched integer, billed boolean,
  idem_request_hash text, idem_status integer, idem_body text)
LANGUAGE plpgsql ROWS 1 AS $$
#variable_conflict use_column
DECLARE
  a record;
  k record;
  w record;
  v_counted boolean := false;
  v_claimed boolean;
  v_claimed_at timestamptz;
  v_attempt boolean;
  v_reused boolean := false;
  v_call_key text := p_call_key;
  v_minute timestamptz := date_trunc('minute', p_now, 'UTC');
  v_day timestamptz := date_trunc('day', p_now, 'UTC');
  v_month timestamptz := date_trunc('month', p_now, 'UTC');
BEGIN
  -- Every call of one account waits on its rate_windows row until the previous call commits.
  -- Committing without waiting for the WAL flush keeps that wait short; a database crash can
  -- then lose the last fraction of a second of counts and debits (those calls go unbilled),
  -- and never applies anything twice or in part.
  PERFORM set_config('synchronous_commit', 'off', true);

  SELECT ak.id, ak.account_id, ak.last_used_at, acc.has_account, acc.unmetered
    INTO a
    FROM api_keys ak
    JOIN accounts acc ON acc.id = ak.account_id
   WHERE ak.key_hash = p_key_hash AND ak.revoked_at IS NULL;
  IF NOT FOUND THEN
    outcome := 'unauthorized';
    RETURN NEXT;
    RETURN;
  END IF;
  key_id := a.id;
  account_id := a.account_id;
  account_bound := a.has_account;
  unmetered := a.unmetered;
  matched := 0;
  billed := false;

  -- A key already answered or in flight decides the call before anything else is read: a
  -- waiting request asks again and again, and each ask stays this cheap.
  IF p_idem_key IS NOT NULL THEN
    SELECT * INTO w FROM idempotent_live(a.account_id, p_idem_key, p_now);
    v_claimed := NOT FOUND;
  END IF;

  -- the billable predicate x_or_farcaster over the deduplicated list, read before any lock is
  -- taken so the locks are held only for the decision and the writes
  IF v_claimed IS NOT FALSE AND p_bill_wallets IS NOT NULL AND cardinality(p_bill_wallets) > 0 THEN
    SELECT count(DISTINCT l.wallet)::integer INTO matched
      FROM links l
     WHERE l.wallet = ANY (p_bill_wallets) AND l.kind IN ('twitter', 'farcaster');
  END IF;

  -- "Checked, not reserved" means each call sees the debits of the calls before it: a call that
  -- will debit holds the account's debit lock (debit_matches takes the same one) from the
  -- balance read to its commit, so concurrent calls, from any process, check one by one. A
  -- call with nothing to bill cannot overdraw and does not queue.
  IF v_claimed IS NOT FALSE AND p_needs_credits AND NOT a.unmetered AND matched > 0 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(a.account_id::text, 7201));
  END IF;

  -- Claim the key: insert, or take over a row whose claim was given back or expired, or a stored
  -- response past 24 hours. Two requests racing for one key meet on the primary key: the second
  -- waits for the first to commit and then finds its claim.
  IF v_claimed THEN
    -- An unanswered row younger than 24 hours is an attempt that may have debited (its process
    -- died, or it was refused or failed after the debit): the same request continues it under
    -- the same debit key; another request body may not ride on its payment.
    SELECT ir.request_hash, ir.created_at INTO w
      FROM idempotent_responses ir
     WHERE ir.account_id = a.account_id AND ir.idem_key = p_idem_key
       AND ir.status IS NULL AND ir.created_at > p_now - interval '24 hours';
    v_attempt := FOUND AND w.request_hash IS NOT DISTINCT FROM p_idem_hash;
    IF FOUND AND NOT v_attempt AND EXISTS (
         SELECT 1 FROM debits x
          WHERE x.account_id = a.account_id
            AND x.call_key = p_call_key || '@' || extract(epoch FROM w.created_at)::text) THEN
      -- answered as a replay of another body: the caller refuses it (IDEMPOTENCY_KEY_REUSED)
      w := NULL;
      SELECT ir.request_hash, NULL::integer AS status, NULL::text AS body INTO w
        FROM idempotent_responses ir
       WHERE ir.account_id = a.account_id AND ir.idem_key = p_idem_key;
      v_claimed := false;
      v_reused := true;
    END IF;
  END IF;
  IF v_claimed THEN
    INSERT INTO idempotent_responses AS ir
           (account_id, idem_key, request_hash, status, body, created_at, claim_token, claimed_until)
    VALUES (a.account_id, p_idem_key, p_idem_hash, NULL, NULL, p_now, p_idem_token,
            p_now + make_interval(secs => p_claim_seconds))
        ON CONFLICT (account_id, idem_key) DO UPDATE
       SET request_hash = excluded.request_hash, status = NULL, body = NULL,
           -- continuing the same request's attempt keeps its start (and so its debit key);
           -- another body, or the key reused after 24 hours, starts anew
           created_at = CASE WHEN ir.status IS NULL AND ir.request_hash IS NOT DISTINCT FROM excluded.request_hash
                              AND ir.created_at > p_now - interval '24 hours'
                             THEN ir.created_at ELSE excluded.created_at END,
           claim_token = excluded.claim_token, claimed_until = excluded.claimed_until
     WHERE CASE WHEN ir.status IS NULL THEN coalesce(ir.claimed_until <= p_now, true)
                ELSE ir.created_at <= p_now - interval '24 hours' END
    RETURNING ir.created_at INTO v_claimed_at;
    v_claimed := FOUND;
    IF v_claimed THEN
      -- The debit is keyed on the key and the start of its attempt: a takeover after a
      -- process died mid-call, or a retry after a refusal, cannot bill twice, and the key reused
      -- after 24 hours bills anew.
      v_call_key := p_call_key || '@' || extract(epoch FROM v_claimed_at)::text;
    ELSE
      SELECT * INTO w FROM idempotent_live(a.account_id, p_idem_key, p_now);
    END IF;
  END IF;

  -- the key's plan limits and balance, read after the lock
  SELECT c.available, c.plan, pl.requests_per_minute, pl.requests_per_day, pl.requests_per_month, pl.max_batch_size
    INTO k
    FROM account_credits(a.account_id, p_now) c
    JOIN plans pl ON pl.name = c.plan;
  available := CASE WHEN a.unmetered THEN NULL ELSE k.available END;
  plan := k.plan;
  limit_minute := k.requests_per_minute;
  limit_day := k.requests_per_day;
  limit_month := k.requests_per_month;
  max_batch_size := k.max_batch_size;

  IF v_claimed IS FALSE THEN
    -- answered (replay) or in flight: nothing is counted
    matched := 0;
    idem_request_hash := w.request_hash;
    idem_status := w.status;
    idem_body := w.body;
    SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = a.account_id;
    used_minute := CASE WHEN w.minute_start = v_minute THEN w.minute_used ELSE 0 END;
    used_day := CASE WHEN w.day_start = v_day THEN w.day_used ELSE 0 END;
    used_month := CASE WHEN w.month_start = v_month THEN w.month_used ELSE 0 END;
    outcome := CASE WHEN v_reused OR idem_status IS NOT NULL THEN 'replay' ELSE 'in_flight' END;
    RETURN NEXT;
    RETURN;
  END IF;

  -- Fast path, the common case: a list within the plan, credits left, and room in every
  -- window. One UPDATE counts the call only where all three windows have room; its WHERE is
  -- re-checked on the newest row version after the row lock, so counting stays atomic.
  IF p_weight > 0
     AND (p_list_size IS NULL OR k.max_batch_size IS NULL OR p_list_size <= k.max_batch_size)
     AND NOT (p_needs_credits AND NOT a.unmetered AND k.available <= 0) THEN
    UPDATE rate_windows rw
       SET minute_start = v_minute,
           minute_used = CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END + p_weight,
           day_start = v_day,
           day_used = CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END + p_weight,
           month_start = v_month,
           month_used = CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END + p_weight
     WHERE rw.account_id = a.account_id
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
      VALUES (a.account_id, v_minute, 0, v_day, 0, v_month, 0)
      ON CONFLICT (account_id) DO NOTHING;
      SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = a.account_id FOR UPDATE;
    ELSE
      SELECT * INTO w FROM rate_windows rw WHERE rw.account_id = a.account_id;
    END IF;
    used_minute := CASE WHEN w.minute_start = v_minute THEN w.minute_used ELSE 0 END;
    used_day := CASE WHEN w.day_start = v_day THEN w.day_used ELSE 0 END;
    used_month := CASE WHEN w.month_start = v_month THEN w.month_used ELSE 0 END;

    IF p_list_size IS NOT NULL AND k.max_batch_size IS NOT NULL AND p_list_size > k.max_batch_size THEN
      outcome := 'batch_too_large';
    ELSIF p_weight > 0 AND (used_minute + p_weight > limit_minute
                         OR used_day + p_weight > limit_day
                         OR used_month + p_weight > limit_month) THEN
      outcome := 'rate_limited';
    ELSIF p_needs_credits AND NOT a.unmetered AND k.available <= 0 THEN
      outcome := 'no_credits';
    END IF;
    IF outcome IS NOT NULL THEN
      -- A refused call gives its claim back, keeping the attempt's start: the retry runs at once
      -- and reproduces the debit key, so an attempt that debited before (a crashed call taken
      -- over, then refused here) is never billed again. Deleting the row forgot that start.
      IF p_idem_key IS NOT NULL THEN
        UPDATE idempotent_responses ir
           SET claim_token = NULL, claimed_until = NULL
         WHERE ir.account_id = a.account_id AND ir.idem_key = p_idem_key AND ir.claim_token = p_idem_token;
      END IF;
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
       WHERE rw.account_id = a.account_id;
    END IF;
  END IF;

  IF matched > 0 AND NOT a.unmetered THEN
    billed := debit_matches(a.account_id, v_call_key, matched, p_now);
  END IF;

  -- last_used_at is kept to the minute: writing it on every call would cost a row update each
  IF a.last_used_at IS NULL OR a.last_used_at < p_now - interval '1 minute' THEN
    UPDATE api_keys SET last_used_at = p_now WHERE api_keys.id = a.id;
  END IF;

  outcome := 'ok';
  RETURN NEXT;
END $$;
