-- name: accounts_insert
INSERT INTO accounts (id, email, free_allowance, has_account, created_at)
VALUES ($1, $2, $3, $4, $5)
RETURNING id
