-- Pay per call over x402: every payment presented for a paid call, claimed once by its replay key
-- before anything runs, and what became of it (the per-call revenue ledger: a settled row is
-- one paid call); and each paying wallet's rate windows, shared by every process.

-- One row per signed payment ever presented for a paid call. Never deleted, so the same payment
-- can never run a second call.
--   claimed  the call is running or its settlement was asked for (or the process stopped there)
--   free     the call billed no match: nothing was settled, nothing moved
--   refused  refused before settlement (rate limit, bad input): nothing moved
--   failed   settlement refused without a transaction: nothing moved, nothing was answered
--   unknown  settlement may have reached the chain (timeout, 5xx, pending): nothing was answered;
--            `admin x402 call settled|failed ID` records the outcome after a check on chain
--   settled  paid: `matches` billed, `amount` atomic units moved in `tx_hash`
CREATE TABLE x402_calls (
  id          uuid PRIMARY KEY,
  network     text NOT NULL,
  asset       text NOT NULL,
  payer       text NOT NULL,
  nonce       text NOT NULL,
  signature   text NOT NULL,
  pay_to      text NOT NULL,
  route       text NOT NULL,
  -- the ceiling the payer signed, in atomic units
  max_amount  numeric(78, 0) NOT NULL CHECK (max_amount >= 0),
  state       text NOT NULL CHECK (state IN ('claimed', 'free', 'refused', 'failed', 'unknown', 'settled')),
  matches     integer CHECK (matches >= 0),
  amount      numeric(78, 0) CHECK (amount >= 0 AND amount <= max_amount),
  tx_hash     text,
  reason      text,
  claimed_at  timestamptz NOT NULL,
  settled_at  timestamptz,
  UNIQUE (network, asset, payer, nonce),
  CHECK (network = lower(network) AND asset = lower(asset) AND payer = lower(payer) AND nonce = lower(nonce))
);

-- what reconciliation reads: the calls whose settlement is open
CREATE INDEX x402_calls_open ON x402_calls (claimed_at) WHERE state IN ('claimed', 'unknown');
-- revenue by payer and time
CREATE INDEX x402_calls_settled ON x402_calls (payer, settled_at) WHERE state = 'settled';

-- A paying wallet's fixed calendar windows (UTC), like rate_windows for an account.
CREATE TABLE x402_payer_windows (
  payer        text PRIMARY KEY CHECK (payer ~ '^0x[0-9a-f]{40}$'),
  minute_start timestamptz NOT NULL,
  minute_used  integer NOT NULL,
  day_start    timestamptz NOT NULL,
  day_used     integer NOT NULL,
  month_start  timestamptz NOT NULL,
  month_used   integer NOT NULL
);

-- Counts p_weight units against the payer's windows under the Developer preset when all three
-- have room and the list ($4, or null) fits the preset's batch size (outcome ok), else counts
-- nothing (outcome rate_limited or batch_too_large); answers the preset and the windows' use.
-- One statement: concurrent calls of one payer, from any process, queue on the payer's row.
CREATE FUNCTION x402_payer_count(p_payer text, p_now timestamptz, p_weight integer, p_list_size integer)
RETURNS TABLE (outcome text, limit_minute integer, limit_day integer, limit_month integer, max_batch_size integer,
               used_minute integer, used_day integer, used_month integer)
LANGUAGE plpgsql AS $$
DECLARE
  v_minute timestamptz := date_trunc('minute', p_now, 'UTC');
  v_day timestamptz := date_trunc('day', p_now, 'UTC');
  v_month timestamptz := date_trunc('month', p_now, 'UTC');
  pl plans%ROWTYPE;
  w x402_payer_windows%ROWTYPE;
BEGIN
  SELECT * INTO pl FROM plans WHERE name = 'Developer';
  limit_minute := pl.requests_per_minute;
  limit_day := pl.requests_per_day;
  limit_month := pl.requests_per_month;
  max_batch_size := pl.max_batch_size;

  INSERT INTO x402_payer_windows (payer, minute_start, minute_used, day_start, day_used, month_start, month_used)
  VALUES (p_payer, v_minute, 0, v_day, 0, v_month, 0)
  ON CONFLICT (payer) DO NOTHING;

  SELECT * INTO w FROM x402_payer_windows pw WHERE pw.payer = p_payer FOR UPDATE;
  used_minute := CASE WHEN w.minute_start = v_minute THEN w.minute_used ELSE 0 END;
  used_day := CASE WHEN w.day_start = v_day THEN w.day_used ELSE 0 END;
  used_month := CASE WHEN w.month_start = v_month THEN w.month_used ELSE 0 END;
  IF p_list_size IS NOT NULL AND p_list_size > coalesce(max_batch_size, 2147483647) THEN
    outcome := 'batch_too_large';
  ELSIF used_minute + p_weight <= coalesce(limit_minute, 2147483647)
        AND used_day + p_weight <= coalesce(limit_day, 2147483647)
        AND used_month + p_weight <= coalesce(limit_month, 2147483647) THEN
    outcome := 'ok';
  ELSE
    outcome := 'rate_limited';
  END IF;
  IF outcome = 'ok' THEN
    used_minute := used_minute + p_weight;
    used_day := used_day + p_weight;
    used_month := used_month + p_weight;
    UPDATE x402_payer_windows
       SET minute_start = v_minute, minute_used = used_minute,
           day_start = v_day, day_used = used_day,
           month_start = v_month, month_used = used_month
     WHERE payer = p_payer;
  END IF;
  RETURN NEXT;
END
$$;
