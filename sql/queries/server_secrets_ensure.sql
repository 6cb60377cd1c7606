-- name: server_secrets_ensure
-- Stores $2 under $1 unless a value is there already, and returns the value that is: the
-- first process to start on a database generates the secret, every later one reads it. The
-- CTE's insert is invisible to the plain SELECT in the same statement, hence the UNION.
WITH inserted AS (
  INSERT INTO server_secrets (name, value) VALUES ($1, $2)
      ON CONFLICT (name) DO NOTHING
  RETURNING value
)
SELECT value FROM inserted
 UNION ALL
SELECT value FROM server_secrets WHERE name = $1
 LIMIT 1
