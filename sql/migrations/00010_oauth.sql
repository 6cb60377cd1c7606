-- OAuth 2.1 for MCP hosts: registered and metadata-document clients, pending consents,
-- authorization codes, connections and their tokens (SHA-256 only), and the request counters
-- of the registration and token endpoints.

-- Each connection owns one hidden key: tool calls meter against it (meter_call is keyed on a
-- key's hash) with the account's windows and balance. Its secret is discarded at creation, it
-- is never listed, never counts toward the account's key cap, and is revoked with its connection.
ALTER TABLE api_keys ADD COLUMN internal boolean NOT NULL DEFAULT false;

CREATE TABLE oauth_clients (
  -- generated for registered clients (never URL-shaped); the document's URL otherwise
  client_id     text PRIMARY KEY,
  source        text NOT NULL CHECK (source IN ('registered', 'document')),
  client_name   text,
  redirect_uris text[] NOT NULL,
  -- what registration answered, or the document as fetched
  metadata      jsonb NOT NULL,
  created_at    timestamptz NOT NULL,
  -- documents only: when the cached copy was fetched (served for one day)
  fetched_at    timestamptz
);

-- A consent page shown and not yet answered; single use, ten minutes.
CREATE TABLE oauth_consents (
  id             uuid PRIMARY KEY,
  client_id      text NOT NULL REFERENCES oauth_clients (client_id),
  redirect_uri   text NOT NULL,
  code_challenge text NOT NULL,
  state          text,
  scope          text NOT NULL,
  resource       text NOT NULL,
  csrf_hash      text NOT NULL,
  created_at     timestamptz NOT NULL
);

CREATE TABLE oauth_connections (
  id           uuid PRIMARY KEY,
  account_id   uuid NOT NULL REFERENCES accounts (id),
  client_id    text NOT NULL REFERENCES oauth_clients (client_id),
  client_name  text,
  key_id       uuid NOT NULL UNIQUE REFERENCES api_keys (id),
  scope        text NOT NULL,
  resource     text NOT NULL,
  created_at   timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at   timestamptz
);

CREATE INDEX oauth_connections_by_account ON oauth_connections (account_id, created_at) WHERE revoked_at IS NULL;

CREATE TABLE oauth_codes (
  code_hash      text PRIMARY KEY CHECK (code_hash ~ '^[0-9a-f]{64}$'),
  client_id      text NOT NULL REFERENCES oauth_clients (client_id),
  account_id     uuid NOT NULL REFERENCES accounts (id),
  redirect_uri   text NOT NULL,
  code_challenge text NOT NULL,
  scope          text NOT NULL,
  resource       text NOT NULL,
  created_at     timestamptz NOT NULL,
  expires_at     timestamptz NOT NULL,
  used_at        timestamptz,
  -- what the code was exchanged for: a replay of the code ends it
  connection_id  uuid REFERENCES oauth_connections (id)
);

-- Access tokens (one hour) and refresh tokens (rotated on every use) of a connection; a token
-- is alive only while its connection is.
CREATE TABLE oauth_tokens (
  token_hash    text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  kind          text NOT NULL CHECK (kind IN ('access', 'refresh')),
  connection_id uuid NOT NULL REFERENCES oauth_connections (id),
  created_at    timestamptz NOT NULL,
  expires_at    timestamptz,
  -- refresh tokens: when this one was exchanged for its successor
  rotated_at    timestamptz,
  CHECK ((kind = 'access') = (expires_at IS NOT NULL))
);

CREATE INDEX oauth_tokens_by_connection ON oauth_tokens (connection_id);

-- Fixed-window request counters: registrations per IP address, token requests per connection.
CREATE TABLE oauth_request_counts (
  bucket       text PRIMARY KEY,
  window_start timestamptz NOT NULL,
  used         integer NOT NULL
);
