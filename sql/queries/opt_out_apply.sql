-- name: opt_out_apply
-- Consumes challenge $1 when its message is exactly $2 and it is unused and unexpired at $4, and
-- records and applies it with signature $3 (opt_out_apply in 00021_opt_outs.sql). No row: the
-- challenge was not open (a replay, or another request consumed it first).
SELECT wallet, action, opted_out, effective_at FROM opt_out_apply($1, $2, $3, $4::timestamptz)
