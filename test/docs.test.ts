// The API reference page at {site_url}/docs, rendered by headless Chromium (Debian's `chromium`):
// a screenshot that is a real picture, and a DOM that lists every endpoint of openapi.json and
// loads nothing from elsewhere.
//
// Without Chromium: under CI (CI set, as .ci/run sets it) the test fails and says to install it;
// elsewhere it is skipped with a message, so `npm test` still runs on a machine without a browser.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { fullPath } from "../src/openapi/docs-page.ts";
import { expectStatus } from "./support/http.ts";
import { startServer, type TestServer } from "./support/server.ts";
import { CHROMIUM, CHROMIUM_FLAGS, chromiumAvailable, inspectPng } from "./support/chromium.ts";

const run = promisify(execFile);

/** Runs headless Chromium on `url` with a fresh profile; returns its stdout. */
async function chromium(args: string[], url: string): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "walletid-chromium-"));
  try {
    const { stdout } = await run(CHROMIUM, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, ...args, url], { timeout: 60_000, maxBuffer: 32 << 20 });
    return stdout;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

describe("GET /docs in headless Chromium", () => {
  let db: Db;
  let server: TestServer;
  let doc: any;

  before(async () => {
    db = await openDatabase({});
    server = await startServer(db);
    doc = (await expectStatus(await server.request("/api/v1/openapi.json"), 200)).body;
  });
  after(async () => {
    await server.close();
    await db.close();
  });

  test("is public, self-contained HTML", async () => {
    const res = await expectStatus(await server.request("/docs"), 200);
    assert.match(res.headers.get("Content-Type") ?? "", /^text\/html/);
    assert.equal(res.headers.get("Access-Control-Allow-Origin"), "*");
    assert.ok(!/<script/i.test(res.text), "no scripts");
    assert.ok(!/(src|href)=["']?(https?:)?\/\//i.test(res.text), "nothing loaded from another origin");
    assert.ok(!/@import|url\(/i.test(res.text), "no external stylesheets or fonts");
  });

  test("renders: a screenshot of the page, and its DOM lists every endpoint of openapi.json", { timeout: 120_000 }, async (t) => {
    if (!chromiumAvailable(t, "the /docs browser test")) return;
    const dir = mkdtempSync(join(tmpdir(), "walletid-docs-"));
    try {
      const shot = join(dir, "docs.png");
      await chromium(["--window-size=1280,1600", "--hide-scrollbars", `--screenshot=${shot}`], `${server.url}/docs`);
      assert.ok(existsSync(shot), "Chromium wrote the screenshot");
      const png = readFileSync(shot);
      const { width, height, distinct } = inspectPng(png);
      assert.deepEqual([width, height], [1280, 1600], "the screenshot has the window's size");
      assert.ok(png.length > 20_000, `a page with content, not a blank one: ${png.length} bytes`);
      assert.ok(distinct > 50, `the picture has text and colour: ${distinct} distinct byte values`);

      const dom = await chromium(["--dump-dom"], `${server.url}/docs`);
      assert.match(dom, /walletid API reference/);
      const text = dom.replace(/<[^>]+>/g, " ").replace(/&#123;/g, "{").replace(/&#125;/g, "}").replace(/\s+/g, " ");
      let endpoints = 0;
      for (const [path, item] of Object.entries<any>(doc.paths)) {
        for (const method of ["get", "post", "put", "patch", "delete"]) {
          if (!item[method]) continue;
          endpoints++;
          const served = fullPath(doc, path);
          assert.ok(text.includes(`${method.toUpperCase()} ${served}`), `the page lists ${method.toUpperCase()} ${served}`);
          const start = dom.indexOf(`id="${item[method].operationId}"`);
          assert.ok(start >= 0, `the page has a section for ${item[method].operationId}`);
          const section = dom.slice(start, dom.indexOf("</section>", start));
          for (const status of Object.keys(item[method].responses)) {
            assert.ok(section.includes(`>${status}</span>`), `${method.toUpperCase()} ${served} shows its ${status} response`);
          }
          assert.ok(section.includes('<pre class="curl">curl '), `${method.toUpperCase()} ${served} shows a curl example`);
        }
      }
      assert.ok(endpoints >= 7, `the document has the endpoints: ${endpoints}`);
      // the named schemas have their own sections, the recorded examples are shown, and the
      // navigation stays in view (its style, as Chromium parsed it)
      for (const name of Object.keys(doc.components.schemas)) assert.ok(dom.includes(`id="schema-${name}"`), `a section for the schema ${name}`);
      assert.ok(dom.includes("Example (a real response, recorded by the test suite)"), "recorded examples on the page");
      assert.match(dom, /nav\{[^}]*position:\s*sticky/, "the navigation is sticky");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
