// npm run worker: bundles scripts/worker.ts and everything it imports into one ES module with
// esbuild (under a second), writes it to the system's temporary directory and runs it in this
// process, which package.json starts with a capped heap. Under tsx the worker's loader and source
// maps held about 100 MB; bundled, an idle worker is about 60 MB. Built at each start, so the
// bundle is always the checkout's code; `tsx scripts/worker.ts` still runs it unbundled.
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build, stop } from "esbuild";

const ENTRY = fileURLToPath(new URL("worker.ts", import.meta.url));

/**
 * import.meta.url keeps naming each source file rather than the bundle: src/db/queries.ts finds
 * sql/ beside itself, wherever the bundle is written.
 */
const sourceUrls = {
  name: "source-urls",
  setup(builder) {
    builder.onLoad({ filter: /\.ts$/ }, (args) => {
      const text = readFileSync(args.path, "utf8");
      if (!text.includes("import.meta.url")) return undefined;
      return { contents: text.replaceAll("import.meta.url", JSON.stringify(pathToFileURL(args.path).href)), loader: "ts" };
    });
  },
};

async function bundle() {
  const result = await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    write: false,
    logLevel: "error",
    plugins: [sourceUrls],
    // CommonJS dependencies that require() Node's own modules need a require in an ES module
    banner: { js: 'import { createRequire as __createRequire } from "node:module"; const require = __createRequire(import.meta.url);' },
  });
  await stop();
  const code = result.outputFiles[0].contents;
  const dir = join(tmpdir(), "walletid-worker");
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${createHash("sha256").update(code).digest("hex").slice(0, 16)}.mjs`);
  // written aside and renamed: two workers starting at once never run half a file
  const partial = `${file}.${process.pid}.tmp`;
  writeFileSync(partial, code);
  renameSync(partial, file);
  return file;
}

let file;
try {
  file = await bundle();
} catch (err) {
  console.error(`Cannot start the worker: its bundle did not build: ${err.message}`);
  process.exit(1);
}
await import(pathToFileURL(file).href);
