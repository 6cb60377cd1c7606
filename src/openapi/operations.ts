// Every operation the app serves, in the order the document and the /docs page list them.
// A new route adds its `openapi` export here (one line) beside mounting its route group.
import { accountOpenapi } from "../routes/account.ts";
import { batchOpenapi } from "../routes/batch.ts";
import { estimateOpenapi } from "../routes/estimate.ts";
import { jobsOpenapi } from "../routes/jobs.ts";
import { mcpOpenapi } from "../routes/mcp.ts";
import { reverseOpenapi } from "../routes/reverse.ts";
import { publicOpenapi } from "../routes/public.ts";
import { walletOpenapi } from "../routes/wallet.ts";
import { connectionsOpenapi, oauthOpenapi } from "../routes/oauth-openapi.ts";
import { x402Openapi } from "../routes/x402.ts";
import { metricsOpenapi } from "../routes/metrics.ts";
import type { Operation } from "./operation.ts";

export const OPERATIONS: Operation[] = [
  ...walletOpenapi,
  ...batchOpenapi,
  ...estimateOpenapi,
  ...reverseOpenapi,
  ...jobsOpenapi,
  ...accountOpenapi,
  ...connectionsOpenapi,
  ...oauthOpenapi,
  ...mcpOpenapi,
  ...x402Openapi,
  ...publicOpenapi,
  ...metricsOpenapi,
];
