-- The MCP server's hourly limit on everything but tools/call (initialize, tools/list, ping,
-- notifications): 600 requests an hour per account for callers with a working credential
-- (all keys and OAuth connections of the account share it), 120 per IP address for the rest.
-- Counted here rather than in memory so that every instance on one database shares the count.
-- (Assigned number 00009; numbered 00007 on its branch because migrations may not leave a gap.)

-- One row per caller and fixed UTC hour; `subject` is 'account:<uuid>' or 'ip:<address>'.
-- Rows of past hours are deleted by the server once an hour.
CREATE TABLE mcp_hourly_requests (
  subject text        NOT NULL,
  hour    timestamptz NOT NULL,
  count   integer     NOT NULL CHECK (count > 0),
  PRIMARY KEY (subject, hour)
);
