-- An account's standing read in one pass over its packs, for meter_calls.
--
-- With 100 accounts, each call of a group is usually its account's only one, and the statement
-- paid per account: its balance (account_credits: every unexpired pack with its running total),
-- then the pack a debit draws on (the same packs and running totals read again by a second
-- lateral lookup), the account row twice (once for unmetered, once inside account_credits), and
-- one PERFORM a debit lock. pgbench (-M prepared, one client, plan_cache_mode =
-- force_generic_plan, the bench database), a group of 15 calls of 15 accounts, 15 random wallets,
-- six alternating pairs of 5 s: 2.04 ms a statement with 00017, 1.88 ms with this one (-8%, faster
-- in 5 of 6 pairs); removing parts one at a time had shown the second pass over the packs at
-- about 13 µs an account and the debit locks' loop at about 5. A group of one account's calls
-- reads one account either way and is unchanged.
--
-- account_standing returns account_credits' columns, then the account's unmetered flag and the
-- earliest-expiring pack with credits left (by expiry, then id: the pack a debit draws on), what
-- is left in it and its running total. account_credits now selects its columns from it, so the
-- balance rules stay in one place. meter_calls reads account_standing where it read accounts,
-- account_credits and the first pack, and takes the debit locks of its accounts in one statement,
-- in the same (account id) order. Locks, their order, the checks and the rows written are those
-- of 00017.
CREATE FUNCTION account_standing(p_account uuid, p_now timestamptz)
RETURNS TABLE (available integer, pack_available integer, on_free_allowance boolean,
               free_resets_at timestamptz, plan text, unmetered boolean,
               pack_id bigint, pack_left integer, pack_drawn integer)
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN s.pack > 0 THEN s.pack
              WHEN a.free_allowance THEN greatest(100 - f.used, 0)
              ELSE greatest(s.pack, 0) END,
         s.pack,
         s.pack <= 0 AND a.free_allowance,
         CASE WHEN s.pack <= 0 AND a.free_allowance THEN f.first_at + interval '30 days' END,
         -- the strongest preset among unexpired packs, exhausted or not
         coalesce(a.plan_override, s.plan, 'Developer'),
         a.unmetered,
         s.first_id, s.first_left, s.first_drawn
    FROM accounts a
   CROSS JOIN LATERAL (
         SELECT coalesce(sum(g.matches - coalesce(d.drawn_after, 0)), 0)::integer AS pack,
                (array_agg(p.plan ORDER BY pl.rank DESC))[1] AS plan,
                -- the first pack with credits left, by expiry then id
                (array_agg(g.id ORDER BY g.expires_at, g.id)
                   FILTER (WHERE g.matches > coalesce(d.drawn_after, 0)))[1] AS first_id,
                (array_agg(g.matches - coalesce(d.drawn_after, 0) ORDER BY g.expires_at, g.id)
                   FILTER (WHERE g.matches > coalesce(d.drawn_after, 0)))[1] AS first_left,
                (array_agg(coalesce(d.drawn_after, 0) ORDER BY g.expires_at, g.id)
                   FILTER (WHERE g.matches > coalesce(d.drawn_after, 0)))[1] AS first_drawn
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

CREATE OR REPLACE FUNCTION account_credits(p_account uuid, p_now timestamptz)
RETURNS TABLE (available integer, pack_available integer, on_free_allowance boolean,
               free_resets_at timestamptz, plan text)
LANGUAGE sql STABLE AS $$
  SELECT s.available, s.pack_available, s.on_free_allowance, s.free_resets_at, s.plan
    FROM account_standing(p_account, p_now) s
$$;

CREATE OR REPLACE FUNCTION meter_calls(
  p_now timestamptz, p_batch_key text, p_key_hashes text[], p_weights integer[],
  p_needs_credits boolean[], p_list_sizes integer[], p_bill_call integer[], p_bill_wallets text[],
  p_lookups text[], p_matched integer[] DEFAULT NULL)
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
  v_ignored text;
  -- per distinct key (index k) of the batch; revoked keys are read too and treated as unknown
  v_key_hashes text[];
  v_key_ids uuid[];
  v_key_accounts uuid[];
  v_key_bound boolean[];
  v_key_last_used timestamptz[];
  v_key_revoked boolean[];
  v_key_unmetered boolean[];
  -- the call index of each billable match (an address with a twitter or farcaster link)
  v_match_calls integer[];
  -- per call (index i): its key's index (null when unauthorized) and its billable matches
  v_key integer[] := '{}';
  v_matched integer[];
  -- per call: how many bill wallets it passed (the bound of a count its caller read)
  v_bill_n integer[];
  -- the accounts of the batch's keys in id order (index j), and per account: whether it counts
  -- units, whether it bills (a metered account with a call billing an address)
  v_accounts uuid[];
  v_counts boolean[];
  v_bills boolean[];
  v_counting uuid[] := '{}';
  v_locked integer;
  -- per account, read under the locks
  v_found boolean[];
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
  v_pack_ids bigint[];
  v_pack_left integer[];
  v_pack_drawn integer[];
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
  k integer;
  v_stamp boolean := false;
  v_all_fit boolean := true;
  v_debit boolean := false;
  v_split boolean := false;
BEGIN
  -- as in meter_call: the window rows are held to commit, so commit without waiting for the
  -- WAL flush; a database crash can lose the last moment's counts and debits, never apply twice.
  -- An assignment, not a statement: a simple expression, no executor.
  v_ignored := set_config('synchronous_commit', 'off', true);

  -- Each distinct key read once by its unique index (revoked_at is returned, not filtered on,
  -- so the plan cannot turn to the partial index of active keys and scan all of them), with the
  -- accounts of the keys in id order, and the call of each billable match. The matches are read
  -- before any lock, as the identity rows are: the debit locks guard the packs, not the links.
  SELECT array_agg(ak.key_hash), array_agg(ak.id), array_agg(ak.account_id), array_agg(acc.has_account),
         array_agg(ak.last_used_at), array_agg(ak.revoked_at IS NOT NULL), array_agg(acc.unmetered),
         array_agg(DISTINCT ak.account_id ORDER BY ak.account_id) FILTER (WHERE ak.revoked_at IS NULL),
         (SELECT array_agg(b.ix)
            FROM (SELECT DISTINCT b.ix, b.wallet FROM unnest(p_bill_call, p_bill_wallets) b(ix, wallet)
                   WHERE p_matched[b.ix] IS NULL) b
           WHERE EXISTS (SELECT 1 FROM links l WHERE l.wallet = b.wallet AND l.kind IN ('twitter', 'farcaster')))
    INTO v_key_hashes, v_key_ids, v_key_accounts, v_key_bound, v_key_last_used, v_key_revoked, v_key_unmetered, v_accounts,
         v_match_calls
    FROM api_keys ak
    JOIN accounts acc ON acc.id = ak.account_id
   WHERE ak.key_hash = ANY (p_key_hashes);

  v_matched := array_fill(0, ARRAY[v_n]);
  v_bill_n := v_matched;
  IF v_match_calls IS NOT NULL THEN
    FOREACH i IN ARRAY v_match_calls LOOP
      v_matched[i] := v_matched[i] + 1;
    END LOOP;
  END IF;
  v_counts := array_fill(false, ARRAY[coalesce(cardinality(v_accounts), 0)]);
  v_bills := v_counts;
  FOR i IN 1 .. v_n LOOP
    k := array_position(v_key_hashes, p_key_hashes[i]);
    CONTINUE WHEN k IS NULL OR v_key_revoked[k];
    v_key[i] := k;
    j := array_position(v_accounts, v_key_accounts[k]);
    v_at[i] := j;
    v_counts[j] := v_counts[j] OR p_weights[i] > 0;
  END LOOP;
  IF p_bill_call IS NOT NULL THEN
    FOREACH i IN ARRAY p_bill_call LOOP
      IF v_key[i] IS NOT NULL AND NOT v_key_unmetered[v_key[i]] THEN
        v_bills[v_at[i]] := true;
      END IF;
      v_bill_n[i] := v_bill_n[i] + 1;
    END LOOP;
  END IF;
  -- the counts the callers read themselves, each within its call's bill wallets
  IF p_matched IS NOT NULL THEN
    FOR i IN 1 .. v_n LOOP
      IF p_matched[i] IS NOT NULL THEN
        v_matched[i] := least(greatest(p_matched[i], 0), v_bill_n[i]);
      END IF;
    END LOOP;
  END IF;

  -- the identity rows of the calls whose key exists, before anything is locked
  IF cardinality(array_remove(p_lookups, NULL)) > 0 THEN
    RETURN QUERY
    SELECT l.ix::integer, NULL::text, NULL::uuid, NULL::uuid, NULL::boolean, NULL::text, NULL::integer,
           NULL::integer, NULL::integer, NULL::integer, NULL::integer, NULL::integer, NULL::integer,
           NULL::integer, NULL::boolean, NULL::integer, NULL::boolean, NULL::text, NULL::integer, NULL::text, r.*
      FROM unnest(p_lookups, v_key) WITH ORDINALITY l(list, k, ix)
     CROSS JOIN LATERAL identity_rows(string_to_array(l.list, ',')) r
     WHERE l.list IS NOT NULL AND l.k IS NOT NULL;
  END IF;

  -- the debit locks of the accounts that bill, then their window rows, both in account id order,
  -- in every batch of every process (meter_call takes an account's debit lock before its row too)
  -- (one statement for every debit lock: v_accounts is in id order and unnest keeps it)
  PERFORM pg_advisory_xact_lock(hashtextextended(t.account_id::text, 7201))
     FROM unnest(v_accounts, v_bills) t(account_id, bills)
    WHERE t.bills;
  FOR j IN 1 .. coalesce(cardinality(v_accounts), 0) LOOP
    IF v_counts[j] THEN
      v_counting := v_counting || v_accounts[j];
    END IF;
  END LOOP;
  IF cardinality(v_counting) > 0 THEN
    SELECT count(*) INTO v_locked
      FROM (SELECT 1 FROM rate_windows rw WHERE rw.account_id = ANY (v_counting) ORDER BY rw.account_id FOR UPDATE) w;
    IF v_locked < cardinality(v_counting) THEN
      -- an account's first counted call: its row is inserted once every existing one is held
      INSERT INTO rate_windows (account_id, minute_start, minute_used, day_start, day_used, month_start, month_used)
      SELECT a, v_minute, 0, v_day, 0, v_month, 0 FROM unnest(v_counting) a ORDER BY a
          ON CONFLICT (account_id) DO NOTHING;
      PERFORM 1 FROM rate_windows rw WHERE rw.account_id = ANY (v_counting) ORDER BY rw.account_id FOR UPDATE;
    END IF;
  END IF;

  -- Under the locks, with a fresh snapshot: each account's plan, balance and windows, and the
  -- earliest-expiring pack with credits left (the one a debit draws on) with what is left in it and
  -- its running total, all of an account's standing from one pass over its packs
  -- (account_standing). One aggregation without ORDER BY, so the arrays share one order
  -- (v_accounts is read again in it); every join is a lateral lookup by key, so none becomes a scan.
  SELECT array_agg(x.account_id), array_agg(x.bills), array_agg(st.unmetered IS NOT NULL AND pl.name IS NOT NULL),
         array_agg(st.unmetered), array_agg(st.available), array_agg(st.plan),
         array_agg(pl.requests_per_minute), array_agg(pl.requests_per_day), array_agg(pl.requests_per_month),
         array_agg(pl.max_batch_size),
         array_agg(CASE WHEN rw.minute_start = v_minute THEN rw.minute_used ELSE 0 END),
         array_agg(CASE WHEN rw.day_start = v_day THEN rw.day_used ELSE 0 END),
         array_agg(CASE WHEN rw.month_start = v_month THEN rw.month_used ELSE 0 END),
         array_agg(CASE WHEN x.bills THEN st.pack_id END), array_agg(CASE WHEN x.bills THEN st.pack_left END),
         array_agg(CASE WHEN x.bills THEN st.pack_drawn END)
    INTO v_accounts, v_bills, v_found, v_unmetered, v_available, v_plan, v_per_minute, v_per_day, v_per_month,
         v_max_batch, v_minute_used, v_day_used, v_month_used, v_pack_ids, v_pack_left, v_pack_drawn
    FROM unnest(v_accounts, v_bills) x(account_id, bills)
    LEFT JOIN LATERAL account_standing(x.account_id, p_now) st ON true
    LEFT JOIN LATERAL (SELECT p.* FROM plans p WHERE p.name = st.plan LIMIT 1) pl ON true
    LEFT JOIN LATERAL (SELECT w.* FROM rate_windows w WHERE w.account_id = x.account_id LIMIT 1) rw ON true;

  -- Each call in batch order sees its account after the calls before it: the same three checks as
  -- meter_call's, on its share of the batch. An account's calls are batched only when all fit.
  v_weights := array_fill(0, ARRAY[coalesce(cardinality(v_accounts), 0)]);
  v_matches := v_weights;
  v_fits := array_fill(true, ARRAY[coalesce(cardinality(v_accounts), 0)]);
  FOR i IN 1 .. v_n LOOP
    CONTINUE WHEN v_key[i] IS NULL;
    j := array_position(v_accounts, v_key_accounts[v_key[i]]);
    v_at[i] := j;
    IF j IS NULL OR NOT v_found[j] THEN
      -- an account whose plan was not found: meter_call answers its calls
      IF j IS NOT NULL THEN
        v_fits[j] := false;
      END IF;
      CONTINUE;
    END IF;
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

  -- ... one debit of the batch's total matches each: drawn from the pack read under the locks
  -- when it covers the total (the common case), all such accounts in one INSERT ...
  IF v_debit THEN
    INSERT INTO debits (account_id, call_key, part, grant_id, source, matches, drawn_after, created_at)
    SELECT t.account_id, p_batch_key, 0, t.pack_id, 'pack', t.matched, t.drawn + t.matched, p_now
      FROM unnest(v_accounts, v_matches, v_fits, v_unmetered, v_pack_ids, v_pack_left, v_pack_drawn)
           t(account_id, matched, fits, unmetered, pack_id, pack_left, drawn)
     WHERE t.fits AND NOT t.unmetered AND t.matched > 0 AND t.pack_left >= t.matched
     ORDER BY t.account_id;
    -- ... and the others split across packs or overdrawn by debit_matches, in id order (it
    -- re-takes the lock already held); most batches have none, and skip this statement
    FOR j IN 1 .. cardinality(v_accounts) LOOP
      v_split := v_split OR (v_fits[j] AND NOT v_unmetered[j] AND v_matches[j] > 0
                             AND NOT coalesce(v_pack_left[j] >= v_matches[j], false));
    END LOOP;
    IF v_split THEN
      PERFORM count(debit_matches(t.account_id, p_batch_key, t.matched, p_now))
         FROM (SELECT t.account_id, t.matched
                 FROM unnest(v_accounts, v_matches, v_fits, v_unmetered, v_pack_left)
                      t(account_id, matched, fits, unmetered, pack_left)
                WHERE t.fits AND NOT t.unmetered AND t.matched > 0 AND NOT coalesce(t.pack_left >= t.matched, false)
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
