-- name: role_settings_apply
-- Behind a pooler in transaction mode: the service's session settings (time zone, generic plans,
-- no JIT, the statement timeout in ms) stored as its role's defaults in this database, for every
-- connection the pooler opens after it. Answers whether anything changed.
SELECT apply_pooled_role_settings($1::integer) AS changed
