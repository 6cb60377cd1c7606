// A server started as a real process (npm start, deno, bun, tsx src/main.ts), in its own process
// group, waited for until it prints its "listening" line.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createPostgresDatabase } from "./db.ts";
import { freePort } from "./ports.ts";

export const ROOT = join(import.meta.dirname, "..", "..");
export const BIN = join(ROOT, "node_modules", ".bin");

/**
 * What `npm run worker` runs, as arguments for spawn(process.execPath, ...): its node options (the
 * heap cap) and the bundling launcher, read from package.json so tests and the bench run the same.
 */
export function workerArgs(): string[] {
  const { script, command, args } = npmScript("worker");
  if (command !== "node") throw new Error(`Cannot start the worker as npm run worker does: its script is not a node command (${script})`);
  return args;
}

/** A package.json script, split into its command and arguments. */
function npmScript(name: string): { script: string; command: string; args: string[] } {
  const script: string = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts[name];
  const [command, ...args] = script.split(" ");
  return { script, command, args };
}

/**
 * The Node options `npm start` runs the server with (`tsx <options> src/main.ts` in package.json),
 * for spawn(process.execPath, [...options, "--import", "tsx", entry]): the bench and the Dockerfile
 * start it with the same ones.
 */
export function serverNodeFlags(): string[] {
  const { script, command, args } = npmScript("start");
  if (command !== "tsx" || args.at(-1) !== "src/main.ts") {
    throw new Error(`Cannot start the server as npm start does: its script is not tsx <options> src/main.ts (${script})`);
  }
  return args.slice(0, -1);
}

export interface Running {
  url: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  /** Resolves with the exit code (or signal) when the process ends. */
  exited: Promise<number | string | null>;
  stop: () => Promise<void>;
}

/** Starts `command` in its own process group on a free port and waits for "walletid listening on". */
export async function startProcess(
  command: string,
  args: string[],
  env: Record<string, string>,
  options: { cwd?: string; port?: number } = {},
): Promise<Running> {
  const port = options.port ?? (await freePort());
  const child: ChildProcess = spawn(command, args, {
    cwd: options.cwd ?? ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PATH: `${BIN}:${process.env.PATH}`, PORT: String(port), HOST: "127.0.0.1", PUBLIC_URL: `http://127.0.0.1:${port}`, ...env },
  });
  let output = "";
  child.stdout!.on("data", (d) => (output += d));
  child.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<number | string | null>((resolve) => child.once("exit", (code, signal) => resolve(code ?? signal)));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        // already gone
      }
      const timer = setTimeout(() => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          // already gone
        }
      }, 10_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const deadline = Date.now() + 60_000;
  while (!output.includes("walletid listening on")) {
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`${command} ${args.join(" ")} did not start: ${output.slice(-3000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return { url: `http://127.0.0.1:${port}`, port, child, output: () => output, exited, stop };
}

/**
 * `tsx src/main.ts` with npm start's Node options, on a PostgreSQL database of its own (dropped by `stop`),
 * without the maintenance schedule or a job worker unless `env` says otherwise.
 */
export async function startMainServer(env: Record<string, string> = {}): Promise<{ server: Running; databaseUrl: string; stop: () => Promise<void> }> {
  const created = await createPostgresDatabase();
  let server: Running;
  try {
    server = await startProcess(process.execPath, [...serverNodeFlags(), "--import", "tsx", "src/main.ts"], {
      DATABASE_URL: created.url,
      MAINTENANCE_AT: "off",
      WORKER: "0",
      LOG_LEVEL: "info",
      ...env,
    });
  } catch (err) {
    await created.drop();
    throw err;
  }
  return {
    server,
    databaseUrl: created.url,
    stop: async () => {
      await server.stop();
      await created.drop();
    },
  };
}
