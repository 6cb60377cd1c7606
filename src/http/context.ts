// Typed per-request values shared between middleware and handlers.
import type { Metered } from "./meter.ts";

declare module "hono" {
  interface ContextVariableMap {
    requestId: string;
    meter: Metered;
    /** The code of the error this request was answered with, for its access line. */
    errorCode: string;
    /** Milliseconds a call paid over x402 waited on the facilitator, for its Server-Timing. */
    facilitatorMs: number;
  }
}
