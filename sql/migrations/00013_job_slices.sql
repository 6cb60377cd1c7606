-- A job's submission stored as slices of addresses instead of a row per address, and its billed
-- count kept chunk by chunk instead of counted again at completion.
--
-- Inserting 100,000 rows into job_wallets took 0.7-0.8 s of every large submission (a foreign-key
-- check and an index entry per row), before a worker could start; a slice of 1,000 addresses is
-- one row. Completion probed `links` for every wallet of the job, 0.5-1 s after the last chunk
-- while nothing else ran; each chunk's checkpoint now counts its own wallets, whose index pages
-- its transaction has just read and written.

-- The deduplicated, lowercased submission in processing order: positions [start, stop) are
-- addresses[1 .. stop - start]. Results and chunks are read by position range.
CREATE TABLE job_wallet_slices (
  job_id    uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  start     integer NOT NULL,
  stop      integer NOT NULL,
  addresses text[] NOT NULL CHECK (cardinality(addresses) = stop - start),
  PRIMARY KEY (job_id, start)
);

-- Random hex does not compress: stored out of line as it is, without trying.
ALTER TABLE job_wallet_slices ALTER COLUMN addresses SET STORAGE EXTERNAL;

INSERT INTO job_wallet_slices (job_id, start, stop, addresses)
SELECT job_id, min(position), max(position) + 1, array_agg(address ORDER BY position)
  FROM job_wallets
 GROUP BY job_id, position / 1000;

DROP TABLE job_wallets;

-- A job's pass over reverse_entries bumps the count of every handle and username it ranks (750
-- rows a chunk in the bench); with full pages about half of those updates were not HOT and wrote
-- a new index entry as well. Room on each page keeps them on it (new pages; VACUUM FULL or a
-- rebuild gives the existing ones theirs).
ALTER TABLE reverse_counts SET (fillfactor = 60);

-- Of the wallets [0, processed) already written, how many resolve to twitter or farcaster: added
-- by each chunk's checkpoint, in the chunk's transaction, so it counts every chunk exactly once
-- whoever writes it. Null for a job created before this migration: its completion counts them all.
ALTER TABLE jobs ADD COLUMN matched_written integer;
ALTER TABLE jobs ALTER COLUMN matched_written SET DEFAULT 0;

-- Completes a job held by p_owner: debits its wallets that resolve to twitter or farcaster once,
-- under the key 'job:<id>', and marks the job completed, in one transaction. The count is the one
-- its checkpoints kept (matched_written), each chunk's taken when the chunk was written.
-- A worker that lost its lease completes nothing; a second completion of the same job finds
-- it completed, and the debit key could not bill twice anyway.
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
       AND EXISTS (SELECT 1 FROM links l WHERE l.wallet = a.wallet AND l.kind IN ('twitter', 'farcaster'));
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
