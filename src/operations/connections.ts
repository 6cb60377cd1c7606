// The caller's OAuth connections: the MCP hosts connected to its account, listed and ended. API
// key only (an OAuth access token is not a key to the metering), free on both meters.
import { ApiError } from "../http/errors.ts";
import type { Metered, Meterer } from "../http/meter.ts";
import { disconnect, listConnections, type Connection } from "../oauth/grants.ts";
import type { OperationDeps } from "./deps.ts";
import { outcomeOf, type Outcome } from "./outcome.ts";

export const CONNECTIONS_ROUTE = "/v1/connections";
export const CONNECTION_ROUTE = "/v1/connections/{id}";

/** The account's live connections, oldest first. */
export function accountConnections(deps: OperationDeps, meterer: Meterer): Promise<Outcome<{ data: Connection[]; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: CONNECTIONS_ROUTE, weight: 0, needsCredits: false });
    return { data: await listConnections(deps.db, metered.accountId), metered };
  });
}

/** Ends one live connection of the account (its tokens stop working); any other id is not found. */
export function endConnection(
  deps: OperationDeps,
  meterer: Meterer,
  input: { id: string },
): Promise<Outcome<{ id: string; endedAt: Date; metered: Metered }>> {
  return outcomeOf(async () => {
    const metered = await meterer.meter({ route: CONNECTION_ROUTE, weight: 0, needsCredits: false });
    const id = input.id.toLowerCase();
    const now = deps.now();
    const ended = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id) && (await disconnect(deps.db, { connectionId: id, accountId: metered.accountId, now }));
    if (!ended) throw new ApiError(404, "CONNECTION_NOT_FOUND", `Connection not found: ${id.slice(0, 60)} is not a live connection of this account`);
    return { id, endedAt: now, metered };
  });
}
