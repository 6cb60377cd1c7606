-- name: opt_outs_select_all
-- Every wallet on the suppression list, oldest first, with the request that put it there.
SELECT o.wallet, o.opted_out_at, r.via, r.reason
  FROM opt_outs o
  JOIN opt_out_requests r ON r.id = o.request_id
 ORDER BY o.opted_out_at, o.wallet
