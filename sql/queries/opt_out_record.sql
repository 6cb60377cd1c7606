-- name: opt_out_record
-- An operator's request for wallet $1 (action $2: remove or restore), recorded with reason $3 at
-- $4 and applied at once (opt_out_record in 00021_opt_outs.sql).
SELECT wallet, opted_out, effective_at FROM opt_out_record($1, $2, 'operator', NULL, NULL, $3, $4::timestamptz)
