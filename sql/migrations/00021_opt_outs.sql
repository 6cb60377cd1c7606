-- Opt-out by wallet signature: a wallet's owner takes it out of every answer, for every caller,
-- from the next request on; `restore` puts it back. The suppression list is one table, and the
-- two reads everything answers from join it: identity_rows (lookups, batches, estimates, metered
-- calls, job results, watchlist records) and reverse_entries_for (reverse pages and their counts,
-- kept by triggers). Billing leaves it out where it counts matches (the meter statements' bill
-- lists, complete_job) and /stats where it counts the index. The index itself is untouched:
-- observations of an opted-out wallet are still stored, and restore shows the truth again.

-- One challenge a wallet may sign (an EIP-4361 message), keyed by its nonce. `used_at` is set
-- once, by the conditional UPDATE of opt_out_apply, so a message works at most once.
CREATE TABLE opt_out_challenges (
  nonce      text PRIMARY KEY,
  wallet     text NOT NULL CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  action     text NOT NULL CHECK (action IN ('remove', 'restore')),
  message    text NOT NULL,
  issued_at  timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at    timestamptz
);

CREATE INDEX opt_out_challenges_expires ON opt_out_challenges (expires_at);

-- Every request that changed the list, kept as its proof: the signed message, the signature and
-- the time, or, for a request that came by another channel, the operator's reason.
CREATE TABLE opt_out_requests (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  wallet     text NOT NULL CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  action     text NOT NULL CHECK (action IN ('remove', 'restore')),
  via        text NOT NULL CHECK (via IN ('signature', 'operator')),
  message    text,
  signature  text,
  reason     text,
  created_at timestamptz NOT NULL,
  CHECK (via <> 'signature' OR (message IS NOT NULL AND signature IS NOT NULL)),
  CHECK (via <> 'operator' OR reason IS NOT NULL)
);

CREATE INDEX opt_out_requests_wallet ON opt_out_requests (wallet, created_at);

-- The suppression list: a wallet here is answered as never seen. Its primary key is the one
-- index every read probes, once per wallet.
CREATE TABLE opt_outs (
  wallet       text PRIMARY KEY CHECK (wallet ~ '^0x[0-9a-f]{40}$'),
  opted_out_at timestamptz NOT NULL,
  request_id   bigint NOT NULL REFERENCES opt_out_requests (id)
);

-- Records a request and applies it: `remove` adds the wallet to the list (a wallet already on it
-- keeps its first time), `restore` takes it off. The wallet's row is locked first, so an import
-- or a job writing the same wallet either commits before (and its reverse entries are removed
-- here) or waits and then sees the list (and writes none).
CREATE FUNCTION opt_out_record(p_wallet text, p_action text, p_via text, p_message text, p_signature text,
                               p_reason text, p_now timestamptz)
RETURNS TABLE (wallet text, opted_out boolean, effective_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_request bigint;
BEGIN
  PERFORM 1 FROM wallets w WHERE w.address = p_wallet FOR UPDATE;
  INSERT INTO opt_out_requests (wallet, action, via, message, signature, reason, created_at)
  VALUES (p_wallet, p_action, p_via, p_message, p_signature, p_reason, p_now)
  RETURNING id INTO v_request;
  IF p_action = 'remove' THEN
    INSERT INTO opt_outs (wallet, opted_out_at, request_id) VALUES (p_wallet, p_now, v_request)
        ON CONFLICT (wallet) DO NOTHING;
    RETURN QUERY SELECT o.wallet, true, o.opted_out_at FROM opt_outs o WHERE o.wallet = p_wallet;
  ELSE
    DELETE FROM opt_outs o WHERE o.wallet = p_wallet;
    RETURN QUERY SELECT p_wallet, false, p_now;
  END IF;
END $$;

-- A signed request: the challenge is consumed by one conditional UPDATE (unused, unexpired, the
-- message exactly as issued), then recorded and applied in the same transaction. No row back:
-- the challenge was unknown, altered, expired or used (a replay, or a second request racing).
CREATE FUNCTION opt_out_apply(p_nonce text, p_message text, p_signature text, p_now timestamptz)
RETURNS TABLE (wallet text, action text, opted_out boolean, effective_at timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c record;
BEGIN
  UPDATE opt_out_challenges ch
     SET used_at = p_now
   WHERE ch.nonce = p_nonce AND ch.message = p_message AND ch.used_at IS NULL AND ch.expires_at > p_now
  RETURNING ch.wallet, ch.action INTO c;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT r.wallet, c.action, r.opted_out, r.effective_at
    FROM opt_out_record(c.wallet, c.action, 'signature', p_message, p_signature, NULL, p_now) r;
END $$;

-- identity_rows (last 00019_identity_rows_twitter_probe.sql) leaves out the wallets on the list:
-- one probe of opt_outs' primary key per wallet asked for (the EXPLAIN is read by
-- test/opt-out.test.ts). Every caller inlines it, so the lookups, meter_call, meter_calls and a
-- job's results all answer an opted-out wallet as never seen.
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
     AND NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = w.address)
$$;

-- reverse_entries_for (00004_reverse.sql) ranks no wallet on the list: its entries leave the
-- pages, and reverse_counts drops with them (its triggers count the deletes).
CREATE OR REPLACE FUNCTION reverse_entries_for(p_wallets text[])
RETURNS TABLE (kind text, key text, wallet text, rank integer)
LANGUAGE sql STABLE AS $$
  WITH l AS (
    SELECT l.wallet, l.kind, l.value, l.fid,
           coalesce(r.class IN ('onchain', 'farcaster', 'attested-social', 'manual'), false) AS attested
      FROM links l
      LEFT JOIN evidence_routes r ON r.route = l.route
     WHERE l.wallet IN (SELECT unnest(p_wallets))
       AND NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = l.wallet)
  ),
  fc AS (
    SELECT l.wallet, l.fid, fa.username, fa.followers, bool_or(l.attested) AS attested
      FROM l
      JOIN farcaster_accounts fa ON fa.fid = l.fid
     WHERE l.kind = 'farcaster'
     GROUP BY l.wallet, l.fid, fa.username, fa.followers
  ),
  shown AS (
    SELECT DISTINCT ON (fc.wallet) fc.wallet, fc.followers
      FROM fc
     ORDER BY fc.wallet, fc.attested DESC, coalesce(fc.followers, -1) DESC, fc.fid
  ),
  eligible AS (
    SELECT l.wallet FROM l GROUP BY l.wallet HAVING bool_and(l.attested)
  )
  SELECT DISTINCT 'twitter', l.value, l.wallet, coalesce(-s.followers, 1)
    FROM l
    LEFT JOIN shown s ON s.wallet = l.wallet
   WHERE l.kind = 'twitter'
  UNION
  SELECT 'farcaster', lower(fc.username), fc.wallet, coalesce(-fc.followers, 1)
    FROM fc
    JOIN eligible e ON e.wallet = fc.wallet
   WHERE fc.attested
$$;

-- A wallet added to the list or taken off it is ranked again at once (its entries removed, or
-- brought back from the links that were kept).
CREATE FUNCTION reverse_entries_after_opt_outs()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM reverse_entries_refresh(ARRAY(SELECT DISTINCT o.wallet FROM old_rows o));
  ELSE
    PERFORM reverse_entries_refresh(ARRAY(SELECT DISTINCT n.wallet FROM new_rows n));
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER opt_outs_reverse_insert AFTER INSERT ON opt_outs
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_opt_outs();
CREATE TRIGGER opt_outs_reverse_delete AFTER DELETE ON opt_outs
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION reverse_entries_after_opt_outs();

-- complete_job (00013_job_slices.sql) bills what its checkpoints counted, less the wallets opted
-- out since: the job's results are read through identity_rows and hide them, so they are not
-- billed either. A job whose wallets include none on the list pays one probe a wallet here.
CREATE OR REPLACE FUNCTION complete_job(p_job uuid, p_owner text, p_now timestamptz)
RETURNS TABLE (completed boolean, matched integer)
LANGUAGE plpgsql AS $$
DECLARE
  j record;
  v_matched integer;
  v_unmetered boolean;
BEGIN
  SELECT * INTO j FROM jobs WHERE id = p_job FOR UPDATE;
  IF NOT FOUND OR j.status <> 'processing' OR j.lease_owner IS DISTINCT FROM p_owner THEN
    completed := false;
    matched := j.matched;
    RETURN NEXT;
    RETURN;
  END IF;
  v_matched := j.matched_written;
  IF v_matched IS NULL THEN
    SELECT count(*)::integer INTO v_matched
      FROM job_wallet_slices s, unnest(s.addresses) AS a (wallet)
     WHERE s.job_id = p_job
       AND EXISTS (SELECT 1 FROM links l WHERE l.wallet = a.wallet AND l.kind IN ('twitter', 'farcaster'))
       AND NOT EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = a.wallet);
  ELSIF EXISTS (SELECT 1 FROM opt_outs) THEN
    v_matched := greatest(0, v_matched - (
      SELECT count(*)::integer
        FROM job_wallet_slices s, unnest(s.addresses) AS a (wallet)
       WHERE s.job_id = p_job
         AND EXISTS (SELECT 1 FROM opt_outs o WHERE o.wallet = a.wallet)
         AND EXISTS (SELECT 1 FROM links l WHERE l.wallet = a.wallet AND l.kind IN ('twitter', 'farcaster'))));
  END IF;
  SELECT a.unmetered INTO v_unmetered FROM accounts a WHERE a.id = j.account_id;
  IF v_matched > 0 AND NOT v_unmetered THEN
    PERFORM debit_matches(j.account_id, 'job:' || p_job::text, v_matched, p_now);
  END IF;
  UPDATE jobs
     SET status = 'completed', matched = v_matched, processed = j.total, stage = NULL,
         completed_at = p_now, lease_owner = NULL, lease_expires_at = NULL
   WHERE id = p_job;
  completed := true;
  matched := v_matched;
  RETURN NEXT;
END $$;
