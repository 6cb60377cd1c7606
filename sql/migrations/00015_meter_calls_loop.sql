-- meter_calls (00014_meter_calls_skips.sql) with its decision taken in PL/pgSQL instead of one
-- large statement. Counted with callgrind on a PostgreSQL 15 backend (single-user mode, with
-- plan_cache_mode = force_generic_plan as the service's connections have it), most of a group's
-- cost is paid whatever its size, most of that in starting the executor on large plans; the
-- decision statement (keys read again, matches, a window over the calls, a second one over the
-- accounts, an array of metered_call rows that four more statements unnested again) cost more
-- than any other, and the first statement (keys, matches, accounts to lock, each per-call array
-- sorted on its own) nearly as much. Now one statement reads each distinct key once, and the debit
-- locks are taken by a loop of simple expressions; one statement reads, under the locks, each
-- account's plan, balance and windows and each call's matches into arrays; a loop over the calls
-- keeps each account's running totals (each call's view of its account after the calls before
-- it, and whether all of the account's calls fit); the writes and the answer read those arrays.
-- Instructions a group: 10 calls of one account 4.90 million against 5.19 (-6%); one call 2.87
-- against 3.07 (-6%); 10 calls of 10 accounts 9.24 against 9.34 (-1%).
-- The checks, the locks and their order, and every row written are unchanged, but for one thing:
-- an account takes its debit lock when its calls bill any address, not only when one matches
-- (the matches are read under the lock). A batch of such an account with no match now queues
-- behind another process's debit of it, as a call with a match always did.
CREATE OR REPLACE FUNCTION meter_calls(
  p_now timestamptz, p_batch_key text, p_key_hashes text[], p_weights integer[],
  p_needs_credits boolean[], p_list_sizes integer[], p_bill_call integer[], p_bill_wallets text[],
  p_lookups text[])
RETURNS TABLE (
  call_ix integer, outcome text, key_id uuid, account_id uuid, account_bound boolean, plan text,
  limit_minute integer, limit_day integer, limit_month integer, max_batch_size integer,
  used_minute integer, used_day integer, used_month integer,
  available integer, unmetered boolean, matched integer, billed boolean,
  idem_request_hash text, idem_status integer, idem_body text,
  -- identity_rows' columns
  address text, last_updated timestamptz, checked_at timestamptz,
  kind text, value text, route text, class text, self_declared boolean, detail jsonb,
  observed_at timestamptz, fid float8, fc_username text, fc_followers integer,
  reachability text, reachability_checked_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_n integer := cardinality(p_key_hashes);
  v_minute timestamptz := date_trunc('minute', p_now, 'UTC');
  v_day timestamptz := date_trunc('day', p_now, 'UTC');
  v_month timestamptz := date_trunc('month', p_now, 'UTC');
  -- per distinct key (index k) of the batch
  v_key_hashes text[];
  v_key_ids uuid[];
  v_key_accounts uuid[];
  v_key_bound boolean[];
  v_key_last_used timestamptz[];
  -- per call (index i): its key's index, null when unauthorized, and its billable matches
  v_key integer[] := '{}';
  v_matched integer[];
  -- the accounts that count units and those that debit, in id order
  v_counting uuid[];
  v_debiting uuid[];
  v_account uuid;
  -- per account (index j), read under the locks
  v_accounts uuid[];
  v_unmetered boolean[];
  v_available integer[];
  v_plan text[];
  v_per_minute integer[];
  v_per_day integer[];
  v_per_month integer[];
  v_max_batch integer[];
  v_minute_used integer[];
  v_day_used integer[];
  v_month_used integer[];
  -- per account: the batch's running totals (its totals after the loop), and whether all its calls fit
  v_weights integer[];
  v_matches integer[];
  v_fits boolean[];
  -- per call: its account's index, the account's weight through it and matches before it
  v_at integer[] := '{}';
  v_through integer[] := '{}';
  v_before integer[] := '{}';
  i integer;
  j integer;
  v_stamp boolean := false;
  v_all_fit boolean := true;
  v_debit boolean := false;
  v_debited integer;
  v_written uuid[];
BEGIN
  -- as in meter_call: the window rows are held to commit, so commit without waiting for the
  -- WAL flush; a database crash can lose the last moment's counts and debits, never apply twice
  PERFORM set_config('synchronous_commit', 'off', true);

  -- the identity rows of the calls whose key exists, before anything is locked
  RETURN QUERY
  SELECT l.ix::integer, NULL::text, NULL::uuid, NULL::uuid, NULL::boolean, NULL::text, NULL::integer,
         NULL::integer, NULL::integer, NULL::integer, NULL::integer, NULL::integer, NULL::integer,
         NULL::integer, NULL::boolean, NULL::integer, NULL::boolean, NULL::text, NULL::integer, NULL::text, r.*
    FROM unnest(p_lookups, p_key_hashes) WITH ORDINALITY l(list, key_hash, ix)
   CROSS JOIN LATERAL identity_rows(string_to_array(l.list, ',')) r
   WHERE l.list IS NOT NULL
     AND EXISTS (SELECT 1 FROM api_keys ak WHERE ak.key_hash = l.key_hash AND ak.revoked_at IS NULL);

  -- Each distinct key of the batch read once (the index scan of = ANY deduplicates the array), with
  -- whether any of its calls counts units and whether any bills an address; then the debit locks
  -- of the metered accounts that bill, in account id order. The per-key arrays come from one
  -- aggregation, so they share one order; the account lists are sorted by their own ORDER BY.
  SELECT array_agg(k.key_hash), array_agg(k.id), array_agg(k.account_id), array_agg(k.has_account),
         array_agg(k.last_used_at),
         array_agg(DISTINCT k.account_id ORDER BY k.account_id) FILTER (WHERE k.counts),
         array_agg(DISTINCT k.account_id ORDER BY k.account_id) FILTER (WHERE k.bills AND NOT k.unmetered)
    INTO v_key_hashes, v_key_ids, v_key_accounts, v_key_bound, v_key_last_used, v_counting, v_debiting
    FROM (SELECT ak.key_hash, ak.id, ak.account_id, acc.has_account, acc.unmetered, ak.last_used_at,
                 EXISTS (SELECT 1 FROM unnest(p_key_hashes, p_weights) c(key_hash, weight)
                          WHERE c.key_hash = ak.key_hash AND c.weight > 0) AS counts,
                 EXISTS (SELECT 1 FROM unnest(p_key_hashes) WITH ORDINALITY c(key_hash, ix)
                          WHERE c.key_hash = ak.key_hash AND c.ix = ANY (p_bill_call)) AS bills
            FROM api_keys ak
            JOIN accounts acc ON acc.id = ak.account_id
           WHERE ak.key_hash = ANY (p_key_hashes) AND ak.revoked_at IS NULL) k;
  -- one simple expression each, no statement: the matches are counted under these locks, next
  IF v_debiting IS NOT NULL THEN
    FOREACH v_account IN ARRAY v_debiting LOOP
      PERFORM pg_advisory_xact_lock(hashtextextended(v_account::text, 7201));
    END LOOP;
  END IF;

  -- Window rows locked in account id order too, after the debit locks, in every batch of every
  -- process, so two batches never wait on each other in a cycle; meter_call takes an account's
  -- debit lock before its row too.
  IF v_counting IS NOT NULL THEN
    INSERT INTO rate_windows (account_id, minute_start, minute_used, day_start, day_used, month_start, month_used)
    SELECT a, v_minute, 0, v_day, 0, v_month, 0 FROM unnest(v_counting) a ORDER BY a
        ON CONFLICT (account_id) DO NOTHING;
    PERFORM 1 FROM rate_windows rw WHERE rw.account_id = ANY (v_counting) ORDER BY rw.account_id FOR UPDATE;
  END IF;

  -- Under the locks, with a fresh snapshot: every account's plan, balance and windows read once
  -- (in one aggregation without ORDER BY, so the arrays share one order), and each call's
  -- billable matches.
  SELECT array_agg(s.account_id), array_agg(s.unmetered), array_agg(s.available), array_agg(s.plan),
         array_agg(s.requests_per_minute), array_agg(s.requests_per_day), array_agg(s.requests_per_month),
         array_agg(s.max_batch_size), array_agg(s.minute_used), array_agg(s.day_used), array_agg(s.month_used),
         (SELECT array_agg(coalesce(m.n, 0) ORDER BY g.ix)
            FROM generate_series(1, v_n) g(ix)
            LEFT JOIN (SELECT b.ix, count(DISTINCT l.wallet)::integer AS n
                         FROM unnest(p_bill_call, p_bill_wallets) b(ix, wallet)
                         JOIN links l ON l.wallet = b.wallet AND l.kind IN ('twitter', 'farcaster')
                        GROUP BY b.ix) m ON m.ix = g.ix)
    INTO v_accounts, v_unmetered, v_available, v_plan, v_per_minute, v_per_day, v_per_month,
         v_max_batch, v_minute_used, v_day_used, v_month_used, v_matched
    FROM (SELECT a.account_id, acc.unmetered, cr.available, cr.plan, pl.requests_per_minute,
                 pl.requests_per_day, pl.requests_per_month, pl.max_batch_size,
                 CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END AS minute_used,
                 CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END AS day_used,
                 CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END AS month_used
            FROM (SELECT DISTINCT x.a FROM unnest(v_key_accounts) x(a)) a(account_id)
            JOIN accounts acc ON acc.id = a.account_id
           CROSS JOIN LATERAL account_credits(a.account_id, p_now) cr
            JOIN plans pl ON pl.name = cr.plan
            LEFT JOIN rate_windows rw ON rw.account_id = a.account_id) s;

  -- Each call in batch order sees its account after the calls before it: the same three checks as
  -- meter_call's, on its share of the batch. An account's calls are batched only when all fit.
  v_weights := array_fill(0, ARRAY[coalesce(cardinality(v_accounts), 0)]);
  v_matches := v_weights;
  v_fits := array_fill(true, ARRAY[coalesce(cardinality(v_accounts), 0)]);
  FOR i IN 1 .. v_n LOOP
    v_key[i] := array_position(v_key_hashes, p_key_hashes[i]);
    CONTINUE WHEN v_key[i] IS NULL;
    j := array_position(v_accounts, v_key_accounts[v_key[i]]);
    IF j IS NULL THEN
      -- an account whose plan was not found: meter_call answers its calls
      v_all_fit := false;
      CONTINUE;
    END IF;
    v_at[i] := j;
    v_before[i] := v_matches[j];
    v_weights[j] := v_weights[j] + p_weights[i];
    v_matches[j] := v_matches[j] + v_matched[i];
    v_through[i] := v_weights[j];
    IF NOT coalesce(
         (p_list_sizes[i] IS NULL OR v_max_batch[j] IS NULL OR p_list_sizes[i] <= v_max_batch[j])
         AND (p_weights[i] = 0 OR (v_minute_used[j] + v_weights[j] <= coalesce(v_per_minute[j], 2147483647)
                                   AND v_day_used[j] + v_weights[j] <= coalesce(v_per_day[j], 2147483647)
                                   AND v_month_used[j] + v_weights[j] <= coalesce(v_per_month[j], 2147483647)))
         AND NOT (p_needs_credits[i] AND NOT v_unmetered[j] AND v_available[j] - v_before[i] <= 0),
         false) THEN
      v_fits[j] := false;
    END IF;
  END LOOP;
  -- what the statements below would find to do: those that would find nothing are not run
  FOR i IN 1 .. v_n LOOP
    CONTINUE WHEN v_key[i] IS NULL;
    IF v_at[i] IS NULL OR NOT v_fits[v_at[i]] THEN
      v_all_fit := false;
    ELSE
      v_stamp := v_stamp OR v_key_last_used[v_key[i]] IS NULL
                 OR v_key_last_used[v_key[i]] < p_now - interval '1 minute';
      v_debit := v_debit OR (v_matched[i] > 0 AND NOT v_unmetered[v_at[i]]);
    END IF;
  END LOOP;

  -- the accounts that fit: their windows counted by the batch's total weight ...
  UPDATE rate_windows rw
     SET minute_start = v_minute,
         minute_used = CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END + t.weight,
         day_start = v_day,
         day_used = CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END + t.weight,
         month_start = v_month,
         month_used = CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END + t.weight
    FROM unnest(v_accounts, v_weights, v_fits) t(account_id, weight, fits)
   WHERE rw.account_id = t.account_id AND t.fits AND t.weight > 0;

  -- ... one debit of the batch's total matches each: where the earliest-expiring pack with
  -- credits left covers the total (the common case), all accounts in one INSERT (the debit
  -- locks are held, so the packs' running totals read here are current) ...
  IF v_debit THEN
    WITH totals AS (
      SELECT t.account_id, t.matched
        FROM unnest(v_accounts, v_matches, v_fits, v_unmetered) t(account_id, matched, fits, unmetered)
       WHERE t.fits AND NOT t.unmetered AND t.matched > 0
    ), written AS (
      INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
      SELECT t.account_id, p_batch_key, 0, fp.id, 'pack', t.matched, fp.drawn + t.matched, p_now
        FROM totals t
       CROSS JOIN LATERAL (
             SELECT cg.id, cg.matches, coalesce(d.drawn_after, 0) AS drawn
               FROM credit_grants cg
               LEFT JOIN LATERAL (
                 SELECT x.drawn_after FROM debits x WHERE x.grant_id = cg.id ORDER BY x.drawn_after DESC LIMIT 1
               ) d ON true
              WHERE cg.account_id = t.account_id AND cg.expires_at > p_now
                AND cg.matches > coalesce(d.drawn_after, 0)
              ORDER BY cg.expires_at, cg.id
              LIMIT 1) fp
       WHERE fp.matches - fp.drawn >= t.matched
       ORDER BY t.account_id
      RETURNING account_id
    )
    SELECT (SELECT count(*) FROM totals), ARRAY(SELECT w.account_id FROM written w)
      INTO v_debited, v_written;

    -- ... and the others split across packs or overdrawn by debit_matches, in id order (it
    -- re-takes the lock already held); most batches have none, and skip this statement
    IF cardinality(v_written) < v_debited THEN
      PERFORM count(debit_matches(t.account_id, p_batch_key, t.matched, p_now))
         FROM (SELECT t.account_id, t.matched
                 FROM unnest(v_accounts, v_matches, v_fits, v_unmetered) t(account_id, matched, fits, unmetered)
                WHERE t.fits AND NOT t.unmetered AND t.matched > 0 AND t.account_id <> ALL (v_written)
                ORDER BY t.account_id
               OFFSET 0) t;
    END IF;
  END IF;

  -- ... last_used_at kept to the minute, as meter_call does; a key another statement is stamping
  -- right now is skipped (it gets the same minute), so two groups never wait on each other here
  IF v_stamp THEN
    UPDATE api_keys ak SET last_used_at = p_now
     WHERE ak.id IN (SELECT k.id FROM api_keys k
                      WHERE k.id IN (SELECT v_key_ids[x.k] FROM unnest(v_key, v_at) x(k, at) WHERE v_fits[x.at])
                        AND (k.last_used_at IS NULL OR k.last_used_at < p_now - interval '1 minute')
                      FOR UPDATE SKIP LOCKED);
  END IF;

  RETURN QUERY
  SELECT g.i, CASE WHEN v_key[g.i] IS NULL THEN 'unauthorized' ELSE 'ok' END,
         v_key_ids[v_key[g.i]], v_key_accounts[v_key[g.i]], v_key_bound[v_key[g.i]], v_plan[v_at[g.i]],
         v_per_minute[v_at[g.i]], v_per_day[v_at[g.i]], v_per_month[v_at[g.i]], v_max_batch[v_at[g.i]],
         v_minute_used[v_at[g.i]] + v_through[g.i], v_day_used[v_at[g.i]] + v_through[g.i],
         v_month_used[v_at[g.i]] + v_through[g.i],
         CASE WHEN v_unmetered[v_at[g.i]] THEN NULL ELSE v_available[v_at[g.i]] - v_before[g.i] END,
         v_unmetered[v_at[g.i]],
         CASE WHEN v_key[g.i] IS NULL THEN NULL ELSE v_matched[g.i] END,
         v_matched[g.i] > 0 AND NOT v_unmetered[v_at[g.i]], NULL::text, NULL::integer, NULL::text,
         NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text,
         NULL::boolean, NULL::jsonb, NULL::timestamptz, NULL::float8, NULL::text, NULL::integer, NULL::text,
         NULL::timestamptz
    FROM generate_series(1, v_n) g(i)
   WHERE v_key[g.i] IS NULL OR v_fits[v_at[g.i]];

  -- The accounts that do not fit: call by call, in batch order, each under its own debit key.
  IF v_all_fit THEN
    RETURN;
  END IF;
  FOR i IN 1 .. v_n LOOP
    CONTINUE WHEN v_key[i] IS NULL OR v_fits[v_at[i]];
    RETURN QUERY
    SELECT i, m.*,
           NULL::text, NULL::timestamptz, NULL::timestamptz, NULL::text, NULL::text, NULL::text, NULL::text,
           NULL::boolean, NULL::jsonb, NULL::timestamptz, NULL::float8, NULL::text, NULL::integer, NULL::text,
           NULL::timestamptz
      FROM meter_call(p_key_hashes[i], p_now, p_weights[i], p_needs_credits[i], p_list_sizes[i], p_batch_key || '.' || i,
                      ARRAY(SELECT b.wallet FROM unnest(p_bill_call, p_bill_wallets) b(ix, wallet) WHERE b.ix = i),
                      NULL, NULL, NULL, 0) m;
  END LOOP;
END $$;
