// The consent page in headless Chromium (Debian's chromium, driven over the DevTools pipe): a
// screenshot that is a real picture, an approval typed into the page's own form that lands on
// the client's loopback callback with a code that works, and a decline (to the loopback
// callback; on the page for an untrusted one). PGlite only: the browser is what is under test.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, test } from "node:test";
import { openDatabase } from "../../src/db/open.ts";
import type { Db } from "../../src/db/types.ts";
import { chromiumAvailable, inspectPng, launchBrowser } from "../support/chromium.ts";
import { createClock, createCustomer, type TestServer } from "../support/server.ts";
import { authorizeUrl, exchange, pkce, register, startOAuthServer } from "./support.ts";

describe("The consent page in headless Chromium", () => {
  let db: Db;
  let server: TestServer;
  let apiKey: string;
  let callback: { url: string; hits: URL[]; close: () => Promise<void> };

  before(async () => {
    db = await openDatabase({});
    server = await startOAuthServer(db, { clock: createClock() });
    ({ apiKey } = await createCustomer(db, { now: new Date("2026-11-20T12:00:30Z") }));
    // the client's loopback callback: a real server that records what the browser brought back
    const hits: URL[] = [];
    const http = createServer((req, res) => {
      hits.push(new URL(req.url ?? "/", "http://127.0.0.1"));
      res.writeHead(200, { "content-type": "text/html" }).end("<p>Back at the client</p>");
    });
    await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
    callback = {
      url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/callback`,
      hits,
      close: () => new Promise<void>((resolve) => http.close(() => resolve())),
    };
  });
  after(async () => {
    await server.close();
    await callback.close();
    await db.close();
  });

  async function consentUrl(redirectUri: string, state: string) {
    const client = await register(server, { redirect_uris: [redirectUri], client_name: "Claude Desktop (test)" });
    const { challenge, verifier } = await pkce();
    const url = authorizeUrl(server, {
      response_type: "code",
      client_id: client.client_id,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
      resource: `${server.url}/mcp`,
    });
    return { url, verifier, clientId: client.client_id };
  }

  test("renders (screenshot), and approving in the page's form lands on the callback with a working code", { timeout: 120_000 }, async (t) => {
    if (!chromiumAvailable(t, "the consent page browser test")) return;
    const browser = await launchBrowser({ width: 1000, height: 1100 });
    try {
      const { url, verifier, clientId } = await consentUrl(callback.url, "browser-state");
      await browser.goto(url);
      const text: string = await browser.evaluate("document.body.innerText");
      assert.match(text, /Claude Desktop \(test\) wants to use your walletid account/);
      assert.match(text, /never be able to/);
      const shot = Buffer.from((await browser.send("Page.captureScreenshot", { format: "png" })).data, "base64");
      const { width, height, distinct } = inspectPng(shot);
      assert.deepEqual([width, height], [1000, 1100]);
      assert.ok(shot.length > 20_000, `a page with content: ${shot.length} bytes`);
      assert.ok(distinct > 50, `text and colour: ${distinct} distinct byte values`);

      const landed = browser.nextLoad();
      await browser.evaluate(`document.querySelector("#api_key").value = ${JSON.stringify(apiKey)}; document.querySelector('button[value="approve"]').click(); true`);
      await landed;
      assert.equal(callback.hits.length, 1, "the browser reached the client's callback");
      const back = callback.hits[0];
      assert.equal(back.searchParams.get("state"), "browser-state");
      assert.equal(back.searchParams.get("iss"), server.url);
      const code = back.searchParams.get("code")!;
      const tokens = await exchange(server, { code, verifier, clientId, redirectUri: callback.url });
      assert.ok((await server.app.verifyAccessToken(tokens.access_token)).ok, "the code the browser carried works");
      assert.match(await browser.evaluate("document.body.innerText"), /Back at the client/);
    } finally {
      await browser.close();
    }
  });

  test("declining: to the loopback callback with access_denied; on the page for a callback elsewhere", { timeout: 120_000 }, async (t) => {
    if (!chromiumAvailable(t, "the consent page browser test")) return;
    const browser = await launchBrowser();
    try {
      callback.hits.length = 0;
      await browser.goto((await consentUrl(callback.url, "decline-state")).url);
      let landed = browser.nextLoad();
      await browser.evaluate(`document.querySelector('button[value="decline"]').click(); true`);
      await landed;
      assert.equal(callback.hits.length, 1);
      assert.equal(callback.hits[0].searchParams.get("error"), "access_denied");
      assert.equal(callback.hits[0].searchParams.get("state"), "decline-state");
      assert.equal(callback.hits[0].searchParams.get("code"), null);

      await browser.goto((await consentUrl("https://client.example/oauth/callback", "s")).url);
      landed = browser.nextLoad();
      await browser.evaluate(`document.querySelector('button[value="decline"]').click(); true`);
      await landed;
      assert.match(await browser.evaluate("document.body.innerText"), /You declined/);
      assert.equal(await browser.evaluate("location.origin"), server.url, "the browser stayed on walletid");
    } finally {
      await browser.close();
    }
  });
});
