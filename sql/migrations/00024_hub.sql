-- Filling the index from a Farcaster hub (docs/operating.md, "Filling the index from a Farcaster
-- hub"): where the backfill and the follower stand, and the lease that keeps them to one process.

-- One row. `start_event_id` is the hub's newest event id when the current (or last) backfill
-- started: the follower starts after it, so nothing that happened during the backfill is lost.
-- `last_event_id` is the last event applied, written in the same transaction as its effects.
-- The lease (holder, lease_until) works as maintenance_runs' does: taken by one UPDATE that only
-- matches while no unexpired lease is held, renewed while the holder lives, expiring on its own
-- when a holder dies.
CREATE TABLE hub_sync (
  name                text PRIMARY KEY CHECK (name = 'farcaster'),
  hub_url             text,
  start_event_id      bigint,
  backfill_started_at timestamptz,
  backfill_done_at    timestamptz,
  last_event_id       bigint,
  head_event_id       bigint,
  head_seen_at        timestamptz,
  holder              uuid,
  lease_until         timestamptz,
  CHECK ((holder IS NULL) = (lease_until IS NULL))
);

INSERT INTO hub_sync (name) VALUES ('farcaster');

-- The backfill's progress per shard: the page token of the next page of fids to read (empty: the
-- first page), the last fid written, written in the same transaction as that page's observations.
CREATE TABLE hub_shards (
  shard      integer PRIMARY KEY CHECK (shard >= 0),
  page_token text NOT NULL DEFAULT '',
  last_fid   bigint NOT NULL DEFAULT 0,
  fids_done  bigint NOT NULL DEFAULT 0,
  done       boolean NOT NULL DEFAULT false
);
