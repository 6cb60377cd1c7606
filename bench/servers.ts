// The bench's child servers: each service or reference server runs as `node --import tsx <entry>`
// with the Node options npm start gives the service, on a free port, its output in a file under
// .bench/; the bench waits for GET /healthz before it drives one.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { serverNodeFlags } from "../test/support/process.ts";

export const ROOT = fileURLToPath(new URL("..", import.meta.url));

export interface ChildServer {
  name: string;
  url: string;
  /** The server's own process (node runs tsx in it), whose CPU time the bench reads. */
  pid: number | undefined;
  /** Why the server stopped before it was asked to, if it did. */
  failure(): string | undefined;
  stop(): Promise<void>;
  /** The ports given in the variables named by startServer's `portEnv`. */
  ports: Record<string, number>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// what a server entry prints while a module it imports is still being written by someone else
const NOT_READY = /ERR_MODULE_NOT_FOUND|Cannot find module|does not provide an export named/;

/**
 * Starts a server whose stdout and stderr go to a file under .bench/ (as a deployment's go to a
 * file or a journal), so its log lines cost the load generator nothing; the file's tail explains a
 * failed start, and it is removed when the server stops cleanly.
 */
function spawnServer(entry: string, env: Record<string, string>) {
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  const logPath = join(ROOT, ".bench", `server-${env.PORT}.log`);
  const fd = openSync(logPath, "w");
  // every server, the references too, with the Node options npm start gives the service
  const child = spawn(process.execPath, [...serverNodeFlags(), "--import", "tsx", entry], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  const output = () => {
    try {
      return readFileSync(logPath, "utf8").slice(-4000);
    } catch {
      return "";
    }
  };
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  return { child, exited, output, remove: () => rmSync(logPath, { force: true }) };
}

export async function waitHealthy(url: string, exited: Promise<unknown>, withinMs: number): Promise<"healthy" | "exited" | "timeout"> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (gone) return "exited";
    try {
      const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) return "healthy";
    } catch {
      // not listening yet
    }
    await sleep(200);
  }
  return "timeout";
}

async function stopChild(child: ChildProcess, exited: Promise<unknown>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  const stopped = await Promise.race([exited.then(() => true), sleep(10_000).then(() => false)]);
  if (!stopped) {
    child.kill("SIGKILL");
    await exited;
  }
}

/** How many times a server is started again on other ports when one it was given was taken. */
const PORT_ATTEMPTS = 5;

/**
 * Starts `node --import tsx <entry>` and waits for GET /healthz to answer 200. While the entry
 * fails on a module that does not exist yet, retries every 30 s for up to `retryForMs`. A port is
 * free when freePort returns it, and may be taken before the server listens on it (by another
 * process's outgoing connection, which draws its port from the same range): a server that exits
 * with EADDRINUSE is started again on fresh ports, PORT and those named by `portEnv` alike.
 */
export async function startServer(
  name: string,
  entry: string,
  env: Record<string, string>,
  options: { retryForMs: number; log: (line: string) => void; portEnv?: string[] },
): Promise<ChildServer> {
  const giveUpAt = Date.now() + options.retryForMs;
  let portAttempts = 0;
  for (;;) {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const ports: Record<string, number> = {};
    for (const variable of options.portEnv ?? []) ports[variable] = await freePort();
    const portVars = Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)]));
    // no daily maintenance: a server runs what is due right after it starts and at every hourly
    // tick, and a stats pass over the whole index would land in whichever case it met
    const started = spawnServer(entry, {
      LOG_LEVEL: "silent",
      MAINTENANCE_AT: "off",
      ...env,
      ...portVars,
      PORT: String(port),
      HOST: "127.0.0.1",
    });
    let stopping = false;
    let failure: string | undefined;
    void started.exited.then(({ code, signal }) => {
      if (!stopping) failure = `the ${name} server exited (${signal ?? `code ${code}`}):\n${started.output().trim()}`;
    });
    const state = await waitHealthy(url, started.exited, 60_000);
    if (state === "healthy") {
      return {
        name,
        url,
        pid: started.child.pid,
        ports,
        failure: () => failure,
        stop: async () => {
          stopping = true;
          await stopChild(started.child, started.exited);
          if (!failure) started.remove();
        },
      };
    }
    stopping = true;
    await stopChild(started.child, started.exited);
    const output = started.output().trim();
    if (state === "exited" && /EADDRINUSE/.test(output) && ++portAttempts < PORT_ATTEMPTS) {
      options.log(`The ${name} server found a port taken; starting it again on others.`);
      continue;
    }
    if (state === "exited" && NOT_READY.test(output) && Date.now() + 30_000 < giveUpAt) {
      const missing = /Cannot find module '([^']+)'/.exec(output)?.[1] ?? output.split("\n").find((l) => NOT_READY.test(l));
      options.log(`The ${name} server cannot start yet (${missing}); retrying in 30 s.`);
      await sleep(30_000);
      continue;
    }
    const why = state === "timeout" ? "did not answer GET /healthz within 60 s" : "exited before answering GET /healthz";
    throw new Error(`Cannot start the ${name} server (${entry}): it ${why}:\n${output}`);
  }
}
