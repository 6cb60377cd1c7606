-- name: webhook_endpoints_select_one
-- Endpoint $1 of account $2, when it exists and is not deleted.
SELECT id, enabled FROM webhook_endpoints WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL
