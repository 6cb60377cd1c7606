-- name: reverse_pending_defer
-- Inside a job chunk's transaction: the reverse triggers queue their wallets under job $1 instead
-- of refreshing reverse_entries statement by statement (00012_job_reverse.sql). Transaction-local,
-- so the connection goes back to the pool refreshing at once for every other writer.
SELECT set_config('walletid.reverse_deferred_job', $1::text, true)
