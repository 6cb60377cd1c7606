// The shape of src/: imports run one way, from the entry point down to the database, and never in
// a circle. Read from the import and export-from lines of every file, type-only imports included.
//
// The layers, lowest first; a file may import its own layer and the layers below it, never above:
//   1. observe/                        logs and metrics, which every other layer reports to
//   2. db/                             the query interface and its drivers
//   3. config.ts                       the environment, read and checked once
//   4. index/ ledger/ sources/ jobs/ maintenance/ events/ hub/
//                                      the domain: plain functions over the database
//   5. http/ openapi/ oauth/ x402/ webhooks/     wire helpers both faces share (envelope, errors, metering,
//                                      bodies, cursors, the OpenAPI builder), and the domains that
//                                      speak HTTP themselves: OAuth clients and grants, x402 payments
//   6. operations/                     what a caller can ask, whatever the wire
//   7. rest/ mcp/                      the two faces, which never import each other
//   8. app.ts                          createApp: mounts the faces
//   9. main.ts node-body.ts            the entry point, its Node body reader and its Node
//      outbound-node.ts                outbound requests (undici, node:dns)
// So operations, the domain, db and http never import src/rest, src/mcp, src/app.ts or src/main.ts.
// A file in a folder not named here fails the test: place a new folder in a layer first.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const SRC = join(ROOT, "src");

const LAYERS: string[][] = [
  ["observe"],
  ["db"],
  ["config.ts"],
  ["index", "ledger", "sources", "jobs", "maintenance", "events", "hub"],
  ["http", "openapi", "oauth", "x402", "webhooks"],
  ["operations"],
  ["rest", "mcp"],
  ["app.ts"],
  ["main.ts", "node-body.ts", "outbound-node.ts"],
];

/** Faces: neither imports the other. */
const FACES = ["rest", "mcp"];

/** Where `from "node:…"` may appear: the entry point, its Node outbound and the database drivers (runtime-specific code). */
const RUNTIME_SPECIFIC = ["main.ts", "outbound-node.ts", "db"];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** The specifiers of a file's static imports and re-exports (`import … from`, `export … from`, `import "…"`). */
function specifiersOf(text: string): string[] {
  const found: string[] = [];
  const patterns = [/^\s*(?:import|export)\s[^;]*?\sfrom\s*["']([^"']+)["']/gm, /^\s*import\s*["']([^"']+)["']/gm, /\bimport\(\s*["']([^"']+)["']\s*\)/g];
  for (const pattern of patterns) for (const m of text.matchAll(pattern)) found.push(m[1]);
  return found;
}

/** The top-level entry of src/ a file belongs to: its folder, or its own name for a file at the top. */
function groupOf(file: string): string {
  return relative(SRC, file).split(/[\\/]/)[0];
}

function layerOf(file: string): number {
  const group = groupOf(file);
  return LAYERS.findIndex((names) => names.includes(group));
}

interface Graph {
  files: string[];
  /** For each file (relative to the repository), the src/ files it imports, relative too. */
  edges: Map<string, string[]>;
  /** For each file, the package specifiers it imports. */
  packages: Map<string, string[]>;
}

function readGraph(): Graph {
  const files = sourceFiles(SRC);
  const edges = new Map<string, string[]>();
  const packages = new Map<string, string[]>();
  for (const file of files) {
    const from = relative(ROOT, file);
    const specifiers = specifiersOf(readFileSync(file, "utf8"));
    edges.set(
      from,
      specifiers.filter((s) => s.startsWith(".")).map((s) => relative(ROOT, resolve(dirname(file), s))),
    );
    packages.set(from, specifiers.filter((s) => !s.startsWith(".")));
  }
  return { files: files.map((f) => relative(ROOT, f)), edges, packages };
}

/** What is wrong with the graph: files outside every layer, imports upward or across faces, runtime imports. */
function layerViolations(graph: Graph): string[] {
  const problems: string[] = [];
  const abs = (f: string) => join(ROOT, f);
  for (const file of graph.files) {
    const layer = layerOf(abs(file));
    if (layer < 0) {
      problems.push(`${file} is in no layer: add "${groupOf(abs(file))}" to LAYERS in test/layout.test.ts`);
      continue;
    }
    for (const target of graph.edges.get(file) ?? []) {
      if (!target.startsWith("src/")) {
        problems.push(`${file} imports ${target}, outside src/`);
        continue;
      }
      const targetLayer = layerOf(abs(target));
      if (targetLayer > layer) {
        problems.push(`${file} (layer ${layer + 1}, ${groupOf(abs(file))}) imports ${target} (layer ${targetLayer + 1}, ${groupOf(abs(target))}), a layer above it`);
      }
      const [a, b] = [groupOf(abs(file)), groupOf(abs(target))];
      if (a !== b && FACES.includes(a) && FACES.includes(b)) problems.push(`${file} imports ${target}: the two faces never import each other`);
    }
    const group = groupOf(abs(file));
    for (const specifier of graph.packages.get(file) ?? []) {
      if (specifier.startsWith("node:") && !RUNTIME_SPECIFIC.includes(group)) {
        problems.push(`${file} imports ${specifier}: only ${RUNTIME_SPECIFIC.join(" and ")} may use the runtime's own modules`);
      }
      if (group === "operations" && (specifier === "hono" || specifier.startsWith("hono/"))) {
        problems.push(`${file} imports ${specifier}: an operation knows no wire`);
      }
    }
  }
  return problems;
}

/** Every import circle, each as the files around it (the first repeated at the end). */
function importCycles(edges: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const path: string[] = [];
  const visit = (file: string) => {
    state.set(file, "open");
    path.push(file);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === "open") cycles.push([...path.slice(path.indexOf(next)), next]);
      else if (!state.has(next) && edges.has(next)) visit(next);
    }
    path.pop();
    state.set(file, "done");
  };
  for (const file of [...edges.keys()].sort()) if (!state.has(file)) visit(file);
  return cycles;
}

test("every src/ file imports only its own layer and those below it; the faces never import each other", () => {
  const problems = layerViolations(readGraph());
  assert.deepEqual(problems, [], problems.join("\n"));
});

test("no import circle in src/", () => {
  const cycles = importCycles(readGraph().edges);
  assert.deepEqual(cycles, [], cycles.map((c) => c.join(" -> ")).join("\n"));
});

test("every relative import names a file that exists", () => {
  const graph = readGraph();
  const known = new Set(graph.files);
  const missing = [...graph.edges].flatMap(([file, targets]) =>
    // a data file (the recorded examples' JSON) is no node of the graph, but must exist too
    targets.filter((t) => t.startsWith("src/") && !known.has(t) && !existsSync(join(ROOT, t))).map((t) => `${file} imports ${t}`),
  );
  assert.deepEqual(missing, [], missing.join("\n"));
});

test("the checks see what they are meant to", () => {
  // the reader finds every form of import this code base writes
  assert.deepEqual(
    specifiersOf('import a from "./a.ts";\nimport type { B } from "../b.ts";\nimport {\n  c,\n  d,\n} from "./c.ts";\nexport { e } from "./e.ts";\nimport "./f.ts";\nconst g = await import("./g.ts");'),
    ["./a.ts", "../b.ts", "./c.ts", "./e.ts", "./f.ts", "./g.ts"],
  );
  // a domain file importing a face, a face importing the other, and a circle are all caught
  const graph: Graph = {
    files: ["src/ledger/a.ts", "src/rest/b.ts", "src/mcp/c.ts", "src/operations/d.ts"],
    edges: new Map([
      ["src/ledger/a.ts", ["src/rest/b.ts"]],
      ["src/rest/b.ts", ["src/mcp/c.ts"]],
      ["src/mcp/c.ts", ["src/operations/d.ts"]],
      ["src/operations/d.ts", ["src/ledger/a.ts"]],
    ]),
    packages: new Map([["src/operations/d.ts", ["hono"]]]),
  };
  const problems = layerViolations(graph);
  assert.equal(problems.length, 3, problems.join("\n"));
  assert.match(problems[0], /src\/ledger\/a\.ts .* imports src\/rest\/b\.ts .*a layer above it/);
  assert.match(problems[1], /faces never import each other/);
  assert.match(problems[2], /an operation knows no wire/);
  assert.deepEqual(importCycles(graph.edges), [["src/ledger/a.ts", "src/rest/b.ts", "src/mcp/c.ts", "src/operations/d.ts", "src/ledger/a.ts"]]);
});
