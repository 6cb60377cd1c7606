// Debian's headless Chromium for browser tests: where it is, what to do without it, the PNG
// check of a screenshot, and a small DevTools-protocol driver over --remote-debugging-pipe
// (file descriptors 3 and 4, NUL-separated JSON), so a test can fill in and submit a form.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { inflateSync } from "node:zlib";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
export const INSTALL = "install Debian's chromium package (apt-get install -y chromium; .ci/run does this)";

/** Fails under CI, skips elsewhere, when Chromium is missing; true when the test may run. */
export function chromiumAvailable(t: { skip: (message: string) => void }, what: string): boolean {
  if (existsSync(CHROMIUM)) return true;
  const message = `Chromium not found at ${CHROMIUM}: ${INSTALL}`;
  if (process.env.CI) assert.fail(message);
  console.error(`\n*** SKIPPED ${what}. ${message} ***\n`);
  t.skip(message);
  return false;
}

export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Width, height and the number of distinct byte values of the decoded pixel rows. */
export function inspectPng(png: Buffer): { width: number; height: number; distinct: number } {
  assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "PNG signature");
  const idat: Buffer[] = [];
  let width = 0;
  let height = 0;
  for (let at = 8; at < png.length; ) {
    const length = png.readUInt32BE(at);
    const type = png.toString("ascii", at + 4, at + 8);
    const data = png.subarray(at + 8, at + 8 + length);
    if (type === "IHDR") {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
    }
    if (type === "IDAT") idat.push(data);
    at += 12 + length;
  }
  const pixels = inflateSync(Buffer.concat(idat));
  return { width, height, distinct: new Set(pixels).size };
}

export interface Browser {
  /** Sends a command to the page; resolves with its result. */
  send(method: string, params?: Record<string, unknown>): Promise<any>;
  /** Navigates and waits for the load event. */
  goto(url: string): Promise<void>;
  /** Evaluates an expression in the page and returns its value. */
  evaluate(expression: string): Promise<any>;
  /** Resolves at the page's next load event. */
  nextLoad(): Promise<void>;
  /** Calls `listener` with the params of every event `method` of the page (e.g. Runtime.bindingCalled). */
  on(method: string, listener: (params: any) => void): void;
  close(): Promise<void>;
}

export async function launchBrowser(options: { width?: number; height?: number } = {}): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), "walletid-chromium-"));
  const child: ChildProcess = spawn(
    CHROMIUM,
    [...CHROMIUM_FLAGS, "--remote-debugging-pipe", `--user-data-dir=${profile}`, `--window-size=${options.width ?? 1000},${options.height ?? 1100}`, "--hide-scrollbars", "about:blank"],
    { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"] },
  );
  const input = child.stdio[3] as Writable;
  const output = child.stdio[4] as Readable;
  let nextId = 1;
  let sessionId: string | undefined;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const listeners = new Set<(message: any) => void>();
  let buffered = "";
  output.on("data", (chunk: Buffer) => {
    buffered += chunk.toString("utf8");
    let end: number;
    while ((end = buffered.indexOf("\0")) !== -1) {
      const message = JSON.parse(buffered.slice(0, end));
      buffered = buffered.slice(end + 1);
      if (message.id !== undefined && pending.has(message.id)) {
        const p = pending.get(message.id)!;
        pending.delete(message.id);
        if (message.error) p.reject(new Error(`${message.error.message}`));
        else p.resolve(message.result);
      } else for (const l of listeners) l(message);
    }
  });
  const raw = (method: string, params: Record<string, unknown> = {}, session?: string) =>
    new Promise<any>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      input.write(JSON.stringify({ id, method, params, ...(session ? { sessionId: session } : {}) }) + "\0");
    });
  const { targetId } = await raw("Target.createTarget", { url: "about:blank" });
  ({ sessionId } = await raw("Target.attachToTarget", { targetId, flatten: true }));
  const send = (method: string, params: Record<string, unknown> = {}) => raw(method, params, sessionId);
  const nextLoad = () =>
    new Promise<void>((resolve) => {
      const onMessage = (m: any) => {
        if (m.sessionId === sessionId && m.method === "Page.loadEventFired") {
          listeners.delete(onMessage);
          resolve();
        }
      };
      listeners.add(onMessage);
    });
  await send("Page.enable");
  // the window's own frame takes some height: fix the page's viewport instead
  await send("Emulation.setDeviceMetricsOverride", { width: options.width ?? 1000, height: options.height ?? 1100, deviceScaleFactor: 1, mobile: false });
  return {
    send,
    nextLoad,
    on(method, listener) {
      listeners.add((m: any) => {
        if (m.sessionId === sessionId && m.method === method) listener(m.params);
      });
    },
    async goto(url) {
      const loaded = nextLoad();
      await send("Page.navigate", { url });
      await loaded;
    },
    async evaluate(expression) {
      const { result, exceptionDetails } = await send("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
      if (exceptionDetails) throw new Error(`Cannot evaluate ${expression}: ${exceptionDetails.text}`);
      return result.value;
    },
    async close() {
      await raw("Browser.close").catch(() => {});
      await new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", () => resolve())));
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
