-- Async jobs: the job row (status, progress checkpoint, lease), its deduplicated wallets in
-- processing order, the cache of earlier live answers, and the completion that bills once.

CREATE TABLE jobs (
  id               uuid PRIMARY KEY,
  account_id       uuid NOT NULL REFERENCES accounts (id),
  key_id           uuid NOT NULL REFERENCES api_keys (id),
  status           text NOT NULL CHECK (status IN ('pending', 'processing', 'completed', 'failed')),
  total            integer NOT NULL CHECK (total > 0),
  -- the checkpoint: wallets [0, processed) have been through every stage
  processed        integer NOT NULL DEFAULT 0,
  -- the stage the chunk at `processed` is in; null between stages and chunks
  stage            text CHECK (stage IN ('index', 'cache', 'live', 'onchain')),
  -- per stage: wallets that entered it and milliseconds spent, summed over every worker run
  stage_stats      jsonb NOT NULL DEFAULT '{}',
  matched          integer,
  -- why a job failed, for operators only: never returned by the API
  failure          text,
  attempts         integer NOT NULL DEFAULT 0,
  lease_owner      text,
  lease_expires_at timestamptz,
  created_at       timestamptz NOT NULL,
  started_at       timestamptz,
  completed_at     timestamptz
);

-- At most one pending or processing job per account, whichever process submits it.
CREATE UNIQUE INDEX jobs_one_active_per_account ON jobs (account_id) WHERE status IN ('pending', 'processing');
-- What a worker looks at when it claims: pending jobs and processing ones whose lease may have run out.
CREATE INDEX jobs_claimable ON jobs (created_at) WHERE status IN ('pending', 'processing');

-- The deduplicated, lowercased submission in processing order; results are read by position.
CREATE TABLE job_wallets (
  job_id   uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  position integer NOT NULL,
  address  text NOT NULL,
  PRIMARY KEY (job_id, position)
);

-- Earlier answers of each live source, found or not: within the cache TTL a wallet is not
-- asked again. What was found is in the index itself (links with the source's route).
-- Keyed address first: lookups are `address = ANY (chunk)`, and with the address leading the
-- planner uses the key even on a new, unanalyzed table (with source first, a generic plan made
-- while the table was small scanned it whole, 500 times slower at 50,000 rows).
CREATE TABLE live_answers (
  address    text NOT NULL,
  source     text NOT NULL,
  found      boolean NOT NULL,
  checked_at timestamptz NOT NULL,
  PRIMARY KEY (address, source)
);

-- Completes a job held by p_owner: counts its wallets that resolve to twitter or farcaster,
-- debits them once under the key 'job:<id>' and marks the job completed, in one transaction.
-- A worker that lost its lease completes nothing; a second completion of the same job finds
-- it completed, and the debit key could not bill twice anyway.
CREATE FUNCTION complete_job(p_job uuid, p_owner text, p_now timestamptz)
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
  SELECT count(*)::integer INTO v_matched
    FROM job_wallets jw
   WHERE jw.job_id = p_job
     AND EXISTS (SELECT 1 FROM links l WHERE l.wallet = jw.address AND l.kind IN ('twitter', 'farcaster'));
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
