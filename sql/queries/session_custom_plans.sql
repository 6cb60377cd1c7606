-- name: session_custom_plans
-- Inside a transaction: the statements after it are planned with their parameters' values (the
-- pool runs force_generic_plan). For the cache lookup, whose generic plan made while live_answers
-- was empty is a sequential scan checked against every element of the chunk, kept by the
-- connection while the table grows; planned with the chunk in hand, it reads the key.
SELECT set_config('plan_cache_mode', 'force_custom_plan', true)
