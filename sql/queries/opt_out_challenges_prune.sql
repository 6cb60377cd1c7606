-- name: opt_out_challenges_prune
-- Forgets challenges that expired before $1: used ones live on as requests (opt_out_requests),
-- unused ones can never be used.
DELETE FROM opt_out_challenges WHERE expires_at < $1
