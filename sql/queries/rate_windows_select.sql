-- name: rate_windows_select
SELECT minute_start, minute_used, day_start, day_used, month_start, month_used
  FROM rate_windows
 WHERE account_id = $1
