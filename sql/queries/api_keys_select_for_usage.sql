-- name: api_keys_select_for_usage
SELECT id, name, prefix, created_at, last_used_at
  FROM api_keys
 WHERE id = $1
