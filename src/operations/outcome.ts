// What an operation answers: its result, or a refusal (an ApiError held as a value) that the face
// renders, REST as the HTTP error and MCP as a tool error. Infrastructure failures still throw.
import { ApiError } from "../http/errors.ts";

export type Refused = { ok: false; refusal: ApiError };

export type Outcome<T extends object> = ({ ok: true } & T) | Refused;

/**
 * An operation's work as an Outcome: a refusal raised on the way (bad input refused after
 * authentication, and metering's 401, 402, 429) comes back as a value; anything else is thrown on.
 */
export async function outcomeOf<T extends object>(work: () => Promise<T>): Promise<Outcome<T>> {
  try {
    return { ok: true, ...(await work()) };
  } catch (err) {
    if (err instanceof ApiError) return { ok: false, refusal: err };
    throw err;
  }
}

/** Whether a value is a refusal (a face's own answers may be any object). */
export function isRefused(value: object): value is Refused {
  return (value as Partial<Refused>).ok === false && (value as Partial<Refused>).refusal instanceof ApiError;
}
