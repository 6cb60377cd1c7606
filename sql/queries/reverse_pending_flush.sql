-- name: reverse_pending_flush
-- Refreshes reverse_entries for every wallet job $1's chunks queued, in one set-based pass, and
-- empties the queue (reverse_pending_flush in 00012_job_reverse.sql). Run before the job completes
-- or fails, whichever worker ends it, so a job never leaves its wallets out of reverse lookups.
SELECT reverse_pending_flush($1) AS wallets
