// A metered REST call paid per call over x402: when x402 is configured and the request carries no
// Authorization, the route answers through here: the 402 challenge (with the Bazaar discovery
// extension), the paid answer with PAYMENT-RESPONSE when money moved, and the refusals.
import type { Context } from "hono";
import { PAYMENT_REQUIRED_CACHE_CONTROL } from "@x402/core/server";
import { bazaarResourceServerExtension, declareDiscoveryExtension, type DeclareDiscoveryExtensionInput } from "@x402/extensions/bazaar";
import { errorBody } from "../http/errors.ts";
import { rateLimitHeaders, type Metered } from "../http/meter.ts";
import { payPerCall, type PaidCall, type PerCallDeps } from "../operations/percall.ts";
import { paymentRequiredHeader, paymentResponseHeader, type PaymentServer } from "../x402/payment.ts";

/** What a paid route tells x402 discovery about itself. */
export interface PaidRoute {
  method: "GET" | "POST";
  /** The hono pattern under {base_url}, e.g. /wallet/:address. */
  pattern: string;
  description: string;
  discovery: DeclareDiscoveryExtensionInput;
}

export const SERVICE_NAME = "walletid";
export const DISCOVERY_TAGS = ["identity", "wallets", "web3", "social"];

const registered = new WeakSet<PaymentServer>();

// a route's Bazaar declaration is the same on every challenge: built once
const declarations = new WeakMap<PaidRoute, ReturnType<typeof declareDiscoveryExtension>>();
function declarationOf(route: PaidRoute): ReturnType<typeof declareDiscoveryExtension> {
  let declared = declarations.get(route);
  if (!declared) declarations.set(route, (declared = declareDiscoveryExtension(route.discovery)));
  return declared;
}

/** Whether a request is paid per call: x402 on and no Authorization (a sent credential is checked as today). */
export function paysPerCall(c: Context, deps: PerCallDeps): boolean {
  return deps.payments !== undefined && !c.req.header("Authorization");
}

function dollars(atomic: bigint): string {
  const whole = atomic / 1_000_000n;
  const fraction = (atomic % 1_000_000n).toString().padStart(6, "0");
  return `${whole}.${fraction} USDC`;
}

/**
 * Answers a paid call: the challenge, the refusal, or `render` of the result with PAYMENT-RESPONSE
 * when money moved. Everything the operation or the payment refuses is thrown for onError.
 */
export async function answerPaid<T extends object>(
  c: Context,
  deps: PerCallDeps,
  route: PaidRoute,
  call: Omit<PaidCall<T>, "paymentSignature">,
  render: (result: T & { metered: Metered }) => Response,
): Promise<Response> {
  const paid = await payPerCall(deps, { ...call, paymentSignature: c.req.header("PAYMENT-SIGNATURE") });
  // for Server-Timing (serverTiming in app.ts): the facilitator's round trips, the rest is the service's own
  if (paid.kind !== "refused") c.set("facilitatorMs", paid.facilitatorMs);
  switch (paid.kind) {
    case "refused":
      throw paid.refusal;
    case "answered":
      if (paid.paymentResponse) c.header("PAYMENT-RESPONSE", paymentResponseHeader(paid.paymentResponse));
      // the paying wallet's windows, as a key's are shown
      for (const [name, value] of Object.entries(rateLimitHeaders(paid.result.metered, deps.now()) ?? {})) c.header(name, value);
      return render(paid.result);
    case "payment_required": {
      const { payments, requirements, reason, settled } = paid;
      if (!registered.has(payments)) {
        payments.resource.registerExtension(bazaarResourceServerExtension);
        registered.add(payments);
      }
      const url = new URL(c.req.url);
      const resource = {
        url: `${deps.config.publicUrl}${url.pathname}${url.search}`,
        description: route.description,
        mimeType: "application/json",
        serviceName: SERVICE_NAME,
        tags: DISCOVERY_TAGS,
      };
      const transport = { method: route.method, adapter: { getPath: () => url.pathname.replace(/^\/api\/v1/, "") }, routePattern: route.pattern };
      const required = await payments.resource.createPaymentRequiredResponse(
        [requirements],
        resource,
        reason ?? "Payment required",
        // the declaration completed with the method and path parameters, as @x402/core's HTTP server does
        payments.resource.enrichExtensions(declarationOf(route), transport),
        transport,
      );
      c.header("PAYMENT-REQUIRED", paymentRequiredHeader(required));
      c.header("Cache-Control", PAYMENT_REQUIRED_CACHE_CONTROL);
      if (settled) c.header("PAYMENT-RESPONSE", paymentResponseHeader(settled));
      const ceiling = dollars(BigInt(requirements.amount));
      const message = reason
        ? `Payment refused (${reason}): nothing was answered or charged; sign a new payment from the PAYMENT-REQUIRED header`
        : `Payment required: send an API key, or pay per call with the x402 challenge in the PAYMENT-REQUIRED header (upto ${ceiling}; ${dollars(deps.price)} a match billed, a miss costs nothing)`;
      return c.json(errorBody("PAYMENT_REQUIRED", message), 402);
    }
  }
}
