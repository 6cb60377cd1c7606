-- name: reachability_check_days_add
-- Adds $2 handles looked up on day $1; runs in the transaction that stores their results.
INSERT INTO reachability_check_days AS d (day, checked) VALUES ($1::date, $2::integer)
    ON CONFLICT (day) DO UPDATE SET checked = d.checked + excluded.checked
RETURNING checked
