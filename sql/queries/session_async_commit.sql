-- name: session_async_commit
-- Inside a transaction: its commit does not wait for the WAL flush (transaction-local). Used by a
-- job's chunk writes and reverse_entries passes: they commit whole or not at all, and a crash of
-- the database can lose only the last fraction of a second of them, which the job, resuming at
-- the checkpoint committed with them, writes again. The job's completion (the debit) commits
-- synchronously, which makes every earlier chunk durable before anything is billed.
SELECT set_config('synchronous_commit', 'off', true)
