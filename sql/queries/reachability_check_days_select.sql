-- name: reachability_check_days_select
-- Handles already looked up on day $1, counted against the daily bound.
SELECT coalesce((SELECT checked FROM reachability_check_days WHERE day = $1::date), 0)::integer AS checked
