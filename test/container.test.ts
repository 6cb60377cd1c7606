// The container, checked without a Docker engine: the Dockerfile's shape (multi-stage, non-root,
// production dependencies only, a health check on /healthz), the build context .dockerignore
// leaves, and a local replay of the build (COPY and RUN into a scratch directory, npm offline)
// whose CMD must start the server on DATABASE_URL and whose HEALTHCHECK must pass, then fail
// once the database is gone.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { createPostgresDatabase } from "./support/db.ts";
import { freePort } from "./support/ports.ts";
import { serverNodeFlags } from "./support/process.ts";

const ROOT = join(import.meta.dirname, "..");
const run = promisify(execFile);

interface Instruction {
  keyword: string;
  args: string;
}

/** Instructions of a Dockerfile: comments dropped, backslash continuations joined. */
function parseDockerfile(text: string): Instruction[] {
  const joined = text.replace(/\\\r?\n/g, " ");
  return joined
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"))
    .map((line) => {
      const [, keyword, args] = /^(\S+)\s*(.*)$/.exec(line)!;
      return { keyword: keyword.toUpperCase(), args: args.trim() };
    });
}

function stages(instructions: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const i of instructions) {
    if (i.keyword === "FROM") out.push([]);
    out.at(-1)?.push(i);
  }
  return out;
}

/** COPY's flags, sources and destination. */
function copyParts(args: string): { from?: string; sources: string[]; dest: string } {
  const words = args.split(/\s+/);
  const flags = words.filter((w) => w.startsWith("--"));
  const paths = words.filter((w) => !w.startsWith("--"));
  const from = flags.find((f) => f.startsWith("--from="))?.slice("--from=".length);
  return { from, sources: paths.slice(0, -1), dest: paths.at(-1)! };
}

/** .dockerignore patterns as matchers of context-relative paths (names, dirs and * globs). */
function ignoreMatchers(text: string): Array<(path: string) => boolean> {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((pattern) => {
      const clean = pattern.replace(/^\/+|\/+$/g, "");
      const re = new RegExp(`^${clean.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^/]*")}(/.*)?$`);
      return (path: string) => re.test(path);
    });
}

function contextFiles(root: string, ignored: (path: string) => boolean, dir = root): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = relative(root, join(dir, entry.name));
    if (ignored(path)) continue;
    if (entry.isDirectory()) out.push(...contextFiles(root, ignored, join(dir, entry.name)));
    else out.push(path);
  }
  return out;
}


function envOf(stage: Instruction[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const i of stage.filter((x) => x.keyword === "ENV")) {
    for (const [, name, value] of i.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) env[name] = value.replace(/^"|"$/g, "");
  }
  return env;
}

const dockerfile = parseDockerfile(readFileSync(join(ROOT, "Dockerfile"), "utf8"));
const allStages = stages(dockerfile);
const final = allStages.at(-1)!;
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

describe("Dockerfile", () => {
  test("every stage is on the current Node LTS line (26, Active LTS since October 2026)", () => {
    for (const stage of allStages) {
      const from = stage.find((i) => i.keyword === "FROM")!;
      assert.match(from.args, /^node:26(-|$)/, `FROM ${from.args}`);
    }
  });

  test("is multi-stage and the image runs as a non-root user", () => {
    assert.ok(allStages.length >= 2, `at least two FROM stages, found ${allStages.length}`);
    const users = final.filter((i) => i.keyword === "USER").map((i) => i.args);
    assert.ok(users.length > 0, "the final stage sets USER");
    assert.ok(!["root", "0", "0:0"].includes(users.at(-1)!), `the image runs as ${users.at(-1)}, not root`);
    const afterUser = final.slice(final.findLastIndex((i) => i.keyword === "USER"));
    assert.ok(afterUser.some((i) => i.keyword === "CMD" || i.keyword === "ENTRYPOINT"), "the command runs after USER");
  });

  test("its CMD starts the server with the Node options npm start gives it", () => {
    const argv: string[] = JSON.parse(final.findLast((i) => i.keyword === "CMD")!.args);
    assert.deepEqual(argv, ["node", ...serverNodeFlags(), "--import", "tsx", "src/main.ts"]);
    assert.ok(serverNodeFlags().includes("--min-semi-space-size=16"), `npm start: ${pkg.scripts.start}`);
  });

  test("installs production dependencies only, from the lockfile", () => {
    const installs = dockerfile.filter((i) => i.keyword === "RUN" && /\bnpm ci\b/.test(i.args));
    assert.ok(installs.length > 0, "a RUN npm ci");
    for (const i of installs) assert.match(i.args, /--omit=dev/, `npm ci --omit=dev: ${i.args}`);
    assert.ok(!dockerfile.some((i) => i.keyword === "RUN" && /\bnpm (install|i)\b/.test(i.args)), "no npm install (it ignores the lockfile)");
    // what the image runs must not need a devDependency
    assert.ok(pkg.dependencies.tsx, "tsx (which the CMD loads) is a runtime dependency");
  });

  test("every package the image's code imports is a runtime dependency", () => {
    // the embedded driver is loaded only without DATABASE_URL, which the image refuses: open.ts
    // must import it lazily, and its PGlite is a devDependency the image leaves out
    const embedded = join("src", "db", "pglite.ts");
    assert.match(readFileSync(join(ROOT, "src/db/open.ts"), "utf8"), /await import\("\.\/pglite\.ts"\)/);
    assert.doesNotMatch(readFileSync(join(ROOT, "src/db/open.ts"), "utf8"), /^import .*pglite/m);
    const files = [...contextFiles(join(ROOT, "src"), () => false).map((f) => join("src", f)), "scripts/admin.ts"].filter((f) => f !== embedded);
    const missing: string[] = [];
    for (const file of files) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const [, spec] of text.matchAll(/(?:^|\s)(?:import|export)\s[^"']*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/gm)) {
        if (!spec || spec.startsWith(".") || spec.startsWith("node:")) continue;
        const name = spec.startsWith("@") ? spec.split("/").slice(0, 2).join("/") : spec.split("/")[0];
        if (!pkg.dependencies[name]) missing.push(`${file}: ${name}`);
      }
    }
    assert.deepEqual(missing, [], "imports of packages outside dependencies (npm ci --omit=dev leaves them out)");
  });

  test("has a HEALTHCHECK on GET /healthz and exposes the port it listens on", () => {
    const health = final.find((i) => i.keyword === "HEALTHCHECK");
    assert.ok(health, "HEALTHCHECK in the final stage");
    assert.match(health.args, /\bCMD\b.*\/healthz/);
    assert.match(health.args, /--timeout=\d+s/);
    const env = envOf(final);
    assert.equal(final.find((i) => i.keyword === "EXPOSE")?.args, env.PORT, "EXPOSE matches ENV PORT");
    assert.equal(env.HOST, "0.0.0.0", "listens on every interface inside the container");
  });

  test("the build context leaves out node_modules, local data, git and logs, and holds every file COPY names", () => {
    const ignoreFile = join(ROOT, ".dockerignore");
    assert.ok(existsSync(ignoreFile), ".dockerignore exists");
    const matchers = ignoreMatchers(readFileSync(ignoreFile, "utf8"));
    const ignored = (path: string) => matchers.some((m) => m(path));
    for (const path of ["node_modules", "node_modules/hono/package.json", ".data", ".data/pgdata/PG_VERSION", ".git", ".git/HEAD", ".bench", "server.log", ".env"]) {
      assert.ok(ignored(path), `${path} is not sent to the builder`);
    }
    const context = contextFiles(ROOT, ignored);
    assert.ok(context.length > 10 && context.length < 400, `a small context: ${context.length} files`);
    for (const i of dockerfile.filter((x) => x.keyword === "COPY" || x.keyword === "ADD")) {
      const { from, sources } = copyParts(i.args);
      if (from) continue;
      for (const source of sources) {
        const clean = source.replace(/^\.\//, "").replace(/\/$/, "");
        assert.ok(existsSync(join(ROOT, clean)), `COPY source ${source} exists`);
        assert.ok(!ignored(clean), `COPY source ${source} is not excluded by .dockerignore`);
        assert.ok(context.some((f) => f === clean || f.startsWith(`${clean}/`)), `COPY source ${source} is in the build context`);
      }
    }
  });
});

/**
 * Replays a RUN without an engine or a network: `npm ci --omit=dev` becomes a copy of the packages
 * npm itself lists as the production tree of this checkout's lockfile. Any other RUN cannot be
 * replayed here and fails the test, so a new one gets a replay written for it.
 */
async function replayRun(command: string, workdir: string): Promise<void> {
  assert.match(command, /^npm ci\b.*--omit=dev/, `no local replay for RUN ${command}: add one to test/container.test.ts`);
  const lockfile = JSON.parse(readFileSync(join(workdir, "package-lock.json"), "utf8"));
  assert.deepEqual(JSON.parse(readFileSync(join(workdir, "package.json"), "utf8")).dependencies, lockfile.packages[""].dependencies, "the lockfile matches package.json");
  const { stdout } = await run("npm", ["ls", "--omit=dev", "--all", "--parseable"], { cwd: ROOT, maxBuffer: 16 << 20 });
  for (const dir of stdout.split("\n").filter((line) => line.includes("/node_modules/"))) {
    cpSync(dir, join(workdir, relative(ROOT, dir)), { recursive: true });
  }
}

describe("the image's command, replayed locally", () => {
  let scratch: string;
  let appDir: string;
  let database: { url: string; drop: () => Promise<void> };

  before(async () => {
    scratch = mkdtempSync(join(tmpdir(), "walletid-image-"));
    const matchers = ignoreMatchers(readFileSync(join(ROOT, ".dockerignore"), "utf8"));
    const ignored = (path: string) => matchers.some((m) => m(path));
    const stageRoots = new Map<string, string>();
    // each stage gets a filesystem root under scratch; COPY and RUN act inside it
    for (const [n, stage] of allStages.entries()) {
      const name = /\bAS\s+(\S+)/i.exec(stage[0].args)?.[1] ?? String(n);
      const root = join(scratch, `stage-${n}`);
      stageRoots.set(name, root);
      stageRoots.set(String(n), root);
      let workdir = root;
      for (const i of stage) {
        if (i.keyword === "WORKDIR") {
          workdir = join(root, i.args);
          mkdirSync(workdir, { recursive: true });
        } else if (i.keyword === "COPY") {
          const { from, sources, dest } = copyParts(i.args);
          const target = dest.startsWith("/") ? join(root, dest) : resolve(workdir, dest);
          for (const source of sources) {
            const src = from ? join(stageRoots.get(from)!, source) : join(ROOT, source);
            const into = dest.endsWith("/") || sources.length > 1 ? join(target, source.split("/").filter(Boolean).at(-1)!) : target;
            mkdirSync(dirname(into), { recursive: true });
            cpSync(src, into, {
              recursive: true,
              filter: (p) => from !== undefined || !ignored(relative(ROOT, p)) || relative(ROOT, p) === "",
            });
          }
        } else if (i.keyword === "RUN") {
          await replayRun(i.args, workdir);
        }
      }
      if (n === allStages.length - 1) appDir = workdir;
    }
    database = await createPostgresDatabase();
  });
  after(async () => {
    await database?.drop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  test("the image holds no devDependency and its CMD serves /healthz on DATABASE_URL; the HEALTHCHECK passes, then fails once the database is gone", { timeout: 120_000 }, async () => {
    for (const dev of Object.keys(pkg.devDependencies)) {
      assert.ok(!existsSync(join(appDir, "node_modules", dev)), `${dev} is not in the image`);
    }
    // nor TypeScript, an optional peer of viem and valibot (see package.json's typescript-dev)
    assert.ok(!existsSync(join(appDir, "node_modules", "typescript")), "typescript is not in the image");
    assert.ok(!existsSync(join(appDir, "node_modules", "deno")) && !existsSync(join(appDir, "node_modules", "bun")));
    assert.ok(!existsSync(join(appDir, "test")), "tests are not in the image");
    const cmd = final.findLast((i) => i.keyword === "CMD")!;
    const argv: string[] = JSON.parse(cmd.args);
    assert.ok(Array.isArray(argv), "CMD in exec form (signals reach the server)");
    const port = await freePort();
    const env = { ...envOf(final), PORT: String(port), DATABASE_URL: database.url };
    const child = spawn(argv[0] === "node" ? process.execPath : argv[0], argv.slice(1), {
      cwd: appDir,
      env: { PATH: process.env.PATH!, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    const exited = new Promise((done) => child.once("exit", done));
    try {
      const deadline = Date.now() + 60_000;
      while (!output.includes("walletid listening on")) {
        assert.ok(child.exitCode === null && Date.now() < deadline, `the CMD did not start the server: ${output}`);
        await new Promise((done) => setTimeout(done, 100));
      }
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      assert.equal(res.status, 200, await res.text());

      const health = final.find((i) => i.keyword === "HEALTHCHECK")!;
      const check = health.args.replace(/^.*?\bCMD\s+/, "");
      const probe = () => run("sh", ["-c", check], { cwd: appDir, env: { PATH: process.env.PATH!, ...env }, timeout: 10_000 }).then(() => 0, (err) => err.code ?? 1);
      assert.equal(await probe(), 0, "HEALTHCHECK passes while the database answers");
      await database.drop();
      assert.notEqual(await probe(), 0, "HEALTHCHECK fails once the database is gone");
      // started without DATABASE_URL, the image's CMD stops at once with one line saying to set it
      const bare = await run(argv[0] === "node" ? process.execPath : argv[0], argv.slice(1), {
        cwd: appDir,
        env: { PATH: process.env.PATH!, ...envOf(final), PORT: String(await freePort()) },
        timeout: 60_000,
      }).then(
        () => ({ code: 0, stderr: "" }),
        (err: { code?: number; stderr?: string }) => ({ code: err.code ?? 1, stderr: String(err.stderr ?? "") }),
      );
      assert.equal(bare.code, 1);
      assert.equal(bare.stderr, "Cannot start: set DATABASE_URL to a postgres:// URL (this image has no embedded database)\n");
      assert.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 503);
    } finally {
      child.kill("SIGTERM");
      await exited;
    }
    assert.equal(child.exitCode, 0, `the server stops cleanly on SIGTERM: ${output}`);
  });
});
