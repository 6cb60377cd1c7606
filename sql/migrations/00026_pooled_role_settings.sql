-- Behind a pooler in transaction mode (PgBouncer), a connection cannot carry the service's
-- session settings as startup parameters (PgBouncer refuses unknown ones), and a SET would stay
-- on whichever server connection ran it. The settings become defaults of the service's role in
-- its database instead, which PostgreSQL applies to every connection the pooler opens. An
-- ordinary role may set its own defaults; nothing is written when they are already in place.
CREATE FUNCTION apply_pooled_role_settings(p_statement_timeout_ms integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_wanted text[] := ARRAY[
    'TimeZone=UTC',
    'plan_cache_mode=force_generic_plan',
    'jit=off',
    'statement_timeout=' || p_statement_timeout_ms::text
  ];
  v_current text[];
BEGIN
  SELECT s.setconfig INTO v_current
  FROM pg_db_role_setting s
  JOIN pg_database d ON d.oid = s.setdatabase
  WHERE d.datname = current_database() AND s.setrole = (SELECT oid FROM pg_roles WHERE rolname = current_user);
  IF v_current IS NOT NULL AND v_current @> v_wanted THEN
    RETURN false;
  END IF;
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET TimeZone = %L', current_user, current_database(), 'UTC');
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET plan_cache_mode = %L', current_user, current_database(), 'force_generic_plan');
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET jit = %L', current_user, current_database(), 'off');
  EXECUTE format('ALTER ROLE %I IN DATABASE %I SET statement_timeout = %L', current_user, current_database(), p_statement_timeout_ms);
  RETURN true;
END
$$;
