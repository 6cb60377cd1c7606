// The API reference page at {site_url}/docs: rendered on the server from the OpenAPI document,
// one self-contained HTML page (inline CSS, no scripts, nothing fetched from elsewhere).
type Json = Record<string, any>;

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

/** Escapes, then turns `code` spans into <code>. */
function prose(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, "<code>$1</code>");
}

/** A JSON Schema as text, its $refs to named schemas linked to their section of the page. */
function schemaBlock(schema: unknown): string {
  const text = escapeHtml(JSON.stringify(schema, null, 2));
  return `<pre>${text.replace(/&#34;#\/components\/schemas\/(\w+)&#34;/g, '<a href="#schema-$1">&#34;#/components/schemas/$1&#34;</a>')}</pre>`;
}

/** The path as a client sends it: the server's path prefix (e.g. /api/v1) plus the template. */
export function fullPath(document: Json, path: string): string {
  const server: string = document.paths[path].servers?.[0]?.url ?? document.servers[0].url;
  return new URL(server).pathname.replace(/\/+$/, "") + path;
}

function parametersTable(parameters: Json[]): string {
  if (parameters.length === 0) return "";
  const rows = parameters
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${p.in}</td><td>${p.required ? "yes" : "no"}</td><td>${prose(p.description ?? "")}</td><td>${schemaBlock(p.schema)}</td></tr>`,
    )
    .join("");
  return `<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>required</th><th>description</th><th>schema</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function responsesList(responses: Json): string {
  const items = Object.entries(responses)
    .map(([status, r]) => {
      const content = r.content ? Object.entries(r.content as Json)[0] : undefined;
      const headers = Object.keys(r.headers ?? {}).map((h) => `<code>${escapeHtml(h)}</code>`).join(" ");
      const example = content?.[1].examples?.recorded;
      const exampleBlock = example === undefined
        ? ""
        : `<p class="example">Example (${escapeHtml(example.summary.charAt(0).toLowerCase() + example.summary.slice(1))}):</p><pre class="example">${escapeHtml(typeof example.value === "string" ? example.value : JSON.stringify(example.value, null, 2))}</pre>`;
      // a recorded header: its value, or what its base64 carries (the description says)
      const headerExamples = Object.entries<Json>(r.headers ?? {})
        .filter(([, h]) => h.examples?.recorded)
        .map(([name, h]) => `<p class="example">Example <code>${escapeHtml(name)}</code>: ${h.examples.recorded.description ? prose(h.examples.recorded.description) : `<code>${escapeHtml(h.examples.recorded.value)}</code>`}</p>`)
        .join("");
      return `<details${status.startsWith("2") ? " open" : ""}><summary><span class="status s${status[0]}">${status}</span> ${prose(r.description)}</summary>${headers ? `<p>Headers: ${headers}</p>` : ""}${headerExamples}${content ? `<p><code>${escapeHtml(content[0])}</code></p>${schemaBlock(content[1].schema)}${exampleBlock}` : ""}</details>`;
    })
    .join("");
  return `<h4>Responses</h4>${items}`;
}

function operationSection(document: Json, path: string, method: string, op: Json): string {
  const full = fullPath(document, path);
  const optional = op.security.some((requirement: Json) => Object.keys(requirement).length === 0);
  const auth =
    op.security.length === 0
      ? "none (public)"
      : optional
        ? "optional: API key in <code>Authorization</code> (or an OAuth access token) where the operation says so"
        : "API key in <code>Authorization</code>";
  const [bodyType, bodyContent] = op.requestBody ? Object.entries<Json>(op.requestBody.content)[0] : [];
  const body = bodyContent
    ? `<h4>Request body</h4><p><code>${escapeHtml(bodyType!)}</code>, required</p>${schemaBlock(bodyContent.schema)}`
    : "";
  const curl = (op["x-codeSamples"] as Json[] | undefined)?.find((sample) => sample.label === "curl")?.source as string | undefined;
  const request = curl ? `<h4>Example request</h4><pre class="curl">${escapeHtml(curl)}</pre>` : "";
  return `<section class="op" id="${escapeHtml(op.operationId)}">
<h3><span class="method ${method}">${method.toUpperCase()}</span> <code class="path">${escapeHtml(full)}</code></h3>
<p class="summary">${prose(op.summary)}</p>
<p>${prose(op.description)}</p>
<p>Authentication: ${auth}</p>
${request}${parametersTable(op.parameters ?? [])}${body}${responsesList(op.responses)}
</section>`;
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#fff}
header{background:#1d2330;color:#fff;padding:20px 32px}header h1{margin:0 0 4px}
main{display:flex;align-items:flex-start}nav{min-width:280px;padding:16px 24px;border-right:1px solid #e3e6ec;position:sticky;top:0;max-height:100vh;overflow-y:auto;box-sizing:border-box}
nav ul{list-style:none;padding:0;margin:0 0 12px}nav li{margin:4px 0;white-space:nowrap}nav a{color:#1d2330;text-decoration:none}
article{padding:16px 32px;max-width:1000px;flex:1;min-width:0}header code{color:#1d2330}section.op{border-bottom:1px solid #e3e6ec;padding:8px 0 16px}
.method{display:inline-block;min-width:48px;text-align:center;border-radius:4px;color:#fff;font-size:13px;padding:2px 6px}
.get{background:#2f7d32}.post{background:#1f5fbf}code{background:#f3f4f7;padding:1px 4px;border-radius:3px}
pre{background:#f6f7f9;padding:8px;overflow:auto;font-size:12px;max-height:320px}p.example code{overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #e3e6ec;padding:4px 6px;vertical-align:top;text-align:left}
.status{font-weight:600}.s2{color:#2f7d32}.s4{color:#b26a00}.s5{color:#b3261e}summary{cursor:pointer;margin:4px 0}`;

/**
 * The guides kept in the repository's docs/ folder, named as plain paths: the service has no
 * public repository URL to link to, and the page loads nothing from elsewhere.
 */
const GUIDES: Array<[path: string, about: string]> = [
  ["README.md", "what walletid is, a walk-through against the demo index, first steps"],
  ["docs/api.md", "billing and idempotency, limits and rate windows, errors, cursors, reverse lookups, estimate, async jobs, how records are decided, the import format"],
  ["docs/mcp.md", "connecting an MCP host, the tools, credentials, errors and limits"],
  ["docs/payments.md", "buying credits over x402, top-up, key recovery, the local facilitator"],
  ["docs/oauth.md", "how MCP hosts connect with OAuth, and its rules"],
  ["docs/operating.md", "deployment, runtimes, the admin CLI, workers, maintenance, logs, metrics, database faults, configuration"],
  ["docs/development.md", "the layout, the tests, adding an endpoint to both faces"],
  ["docs/architecture.md", "the path of a request from entry to SQL, metering, the ledger"],
  ["docs/performance.md", "the benchmark and what was measured"],
];

function guidesSection(): string {
  const items = GUIDES.map(([path, about]) => `<li><code>${escapeHtml(path)}</code>: ${escapeHtml(about)}</li>`).join("");
  return `<h2 id="guides">Guides</h2><p>This page is the reference. The guides in walletid's source repository explain what it cannot say one operation at a time:</p><ul>${items}</ul>`;
}

export function renderDocsPage(document: Json): string {
  const ops: Array<{ path: string; method: string; op: Json }> = [];
  for (const [path, item] of Object.entries(document.paths as Json)) {
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      if (item[method]) ops.push({ path, method, op: item[method] });
    }
  }
  const tags: string[] = document.tags.map((t: Json) => t.name);
  const nav = tags
    .map((tag) => {
      const links = ops
        .filter((o) => o.op.tags[0] === tag)
        .map((o) => `<li><a href="#${escapeHtml(o.op.operationId)}"><span class="method ${o.method}">${o.method.toUpperCase()}</span> ${escapeHtml(fullPath(document, o.path))}</a></li>`)
        .join("");
      return `<h4>${escapeHtml(tag)}</h4><ul>${links}</ul>`;
    })
    .join("");
  const sections = tags
    .map((tag) => `<h2>${escapeHtml(tag)}</h2>${ops.filter((o) => o.op.tags[0] === tag).map((o) => operationSection(document, o.path, o.method, o.op)).join("\n")}`)
    .join("\n");
  const schemas = Object.entries((document.components.schemas ?? {}) as Json);
  const schemaNav = `<h4>Schemas</h4><ul>${schemas.map(([name]) => `<li><a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a></li>`).join("")}</ul>`;
  const schemaSections = `<h2 id="schemas">Schemas</h2>${schemas.map(([name, schema]) => `<section class="schema" id="schema-${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>${schemaBlock(schema)}</section>`).join("\n")}`;
  const schemes = Object.values(document.components.securitySchemes as Json).map((s: Json) => `<li>${prose(s.description)}</li>`).join("");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(document.info.title)} API reference ${escapeHtml(document.info.version)}</title><style>${STYLE}</style></head>
<body><header><h1>${escapeHtml(document.info.title)} API reference</h1><div>Version ${escapeHtml(document.info.version)} · base URL <code>${escapeHtml(document.servers[0].url)}</code> · <a style="color:#9cc3ff" href="${escapeHtml(new URL(document.servers[0].url).pathname)}/openapi.json">openapi.json</a> (OpenAPI ${escapeHtml(document.openapi)})</div></header>
<main><nav><h4><a href="#guides">Guides</a></h4>${nav}${schemaNav}</nav><article>
<p>${prose(document.info.description)}</p>
${guidesSection()}
<h2>Authentication</h2><ul>${schemes}</ul>
${sections}
${schemaSections}
</article></main></body></html>`;
}
