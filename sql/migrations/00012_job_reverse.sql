-- A job keeps reverse_entries current outside its chunks' transactions instead of once per
-- statement of every chunk. A chunk's transaction names its job in walletid.reverse_deferred_job
-- (transaction-local); the reverse triggers then queue the wallets they would have refreshed, under
-- the job, and the job refreshes what is queued in set-based passes (reverse_pending_flush) behind
-- its pipeline, and once more before it completes or fails.
-- Every other writer (imports, maintenance, the admin CLI) sets nothing and refreshes at once, as before.
--
-- Per chunk this was three passes over the same wallets: the links trigger ranked them before their
-- farcaster accounts existed, the farcaster_accounts trigger deleted that and ranked them again, and
-- reverse_counts moved both times; with the generic plan of reverse_entries_refresh (ten wallets
-- assumed) each pass also joined every twitter row to every farcaster row of the chunk.

-- Wallets whose reverse entries are due, one row per deferred trigger call. Rows of a job that
-- died are flushed by whichever worker completes or fails the job.
CREATE TABLE reverse_pending (
  job_id  uuid NOT NULL,
  wallets text[] NOT NULL
);

CREATE INDEX reverse_pending_job ON reverse_pending (job_id);

-- What the reverse triggers do with the wallets a statement touched: refresh them now, or queue
-- them under the job that defers this transaction's refreshes.
CREATE FUNCTION reverse_entries_touch(p_wallets text[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  v_job uuid := nullif(current_setting('walletid.reverse_deferred_job', true), '')::uuid;
BEGIN
  IF v_job IS NULL THEN
    PERFORM reverse_entries_refresh(p_wallets);
  ELSIF cardinality(p_wallets) > 0 THEN
    INSERT INTO reverse_pending (job_id, wallets) VALUES (v_job, p_wallets);
  END IF;
END $$;

CREATE OR REPLACE FUNCTION reverse_entries_after_links()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM reverse_entries_touch(ARRAY(SELECT DISTINCT o.wallet FROM old_rows o));
  ELSE
    PERFORM reverse_entries_touch(ARRAY(SELECT DISTINCT n.wallet FROM new_rows n));
  END IF;
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION reverse_entries_after_farcaster_accounts()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM reverse_entries_touch(ARRAY(
    SELECT DISTINCT l.wallet FROM links l JOIN new_rows n ON l.fid = n.fid WHERE l.kind = 'farcaster'));
  RETURN NULL;
END $$;

-- Refreshes every wallet queued under the job and empties its queue; returns how many wallets.
-- The statements go through EXECUTE so that they are planned with the array itself: knowing it
-- holds 50,000 wallets, the planner joins by hash instead of looping over every pair.
CREATE FUNCTION reverse_pending_flush(p_job uuid)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
  v_wallets text[];
BEGIN
  WITH queued AS (DELETE FROM reverse_pending WHERE job_id = p_job RETURNING wallets)
  SELECT array_agg(DISTINCT w ORDER BY w) INTO v_wallets FROM queued, unnest(queued.wallets) AS w;
  IF v_wallets IS NULL THEN
    RETURN 0;
  END IF;
  EXECUTE 'DELETE FROM reverse_entries e WHERE e.wallet = ANY ($1)' USING v_wallets;
  EXECUTE 'INSERT INTO reverse_entries (kind, key, wallet, rank) SELECT * FROM reverse_entries_for($1) ON CONFLICT DO NOTHING'
    USING v_wallets;
  RETURN cardinality(v_wallets);
END $$;
