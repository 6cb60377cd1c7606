-- name: account_credits_select
SELECT * FROM account_credits($1, $2)
