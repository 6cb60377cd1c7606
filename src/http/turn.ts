// Waiting for the rest of the event loop's turn with Web APIs alone (Node, Deno and Bun alike).

/**
 * Resolves once the work queued so far has run: every promise continuation (a message is a task,
 * so every microtask before it goes first) and, on Node, the input the event loop read in this
 * turn (a port's message is delivered by a later poll of the loop). No timer: setTimeout's clamp
 * of a millisecond or more does not apply, and nothing is held once the message has arrived.
 */
export function afterPendingWork(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

/**
 * How a free metering lane waits for the rest of the turn's input (src/http/meter-group.ts):
 * afterPendingWork unless the entry point installs its runtime's own (useTurnEnd).
 */
let turnEnd: () => Promise<void> = afterPendingWork;

/**
 * Installs (or, with undefined, removes) the entry point's way to wait for the end of the event
 * loop's turn, for every app in the process. On Node, setImmediate runs right after the poll phase
 * that read the input, where a port's message waits for the loop's next poll. Measured in pairs of
 * 8 s at 32 connections (the message's server always started first, which favoured the other by
 * about 1% in pairs run both ways): the metered lookup at 5,833 req/s with the message, 6,239 with
 * setImmediate.
 */
export function useTurnEnd(wait: (() => Promise<void>) | undefined): void {
  turnEnd = wait ?? afterPendingWork;
}

/** Resolves at the end of this turn of the event loop, once the input it read has been handled. */
export function endOfTurn(): Promise<void> {
  return turnEnd();
}
