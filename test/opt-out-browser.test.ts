// The opt-out page in headless Chromium with an injected EIP-1193 test provider (window.ethereum)
// whose personal_sign is answered by this test through a DevTools binding, signing with a real
// key: connect, sign, opted out; a declined signature leaves a clear message and changes nothing.
// The page's own Content-Security-Policy stays in force. PGlite only: the browser is under test.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { hexToString, type Hex } from "viem";
import { openDatabase } from "../src/db/open.ts";
import type { Db } from "../src/db/types.ts";
import { chromiumAvailable, launchBrowser, type Browser } from "./support/chromium.ts";
import { importIndex } from "./support/http.ts";
import { createClock, startServer, type TestServer } from "./support/server.ts";

/** The provider a wallet extension would inject; signing goes to the test through `walletSign`. */
function providerScript(account: string): string {
  return `
    (function () {
      var pending = {};
      var next = 1;
      window.__walletAnswer = function (id, result, refused) {
        var p = pending[id];
        delete pending[id];
        if (refused) p.reject(Object.assign(new Error("User rejected the request."), { code: 4001 }));
        else p.resolve(result);
      };
      window.ethereum = {
        request: function (args) {
          if (args.method === "eth_requestAccounts" || args.method === "eth_accounts") return Promise.resolve([${JSON.stringify(account)}]);
          if (args.method === "personal_sign") {
            return new Promise(function (resolve, reject) {
              var id = next++;
              pending[id] = { resolve: resolve, reject: reject };
              window.walletSign(JSON.stringify({ id: id, params: args.params }));
            });
          }
          return Promise.reject(Object.assign(new Error("unsupported"), { code: 4200 }));
        },
      };
    })();`;
}

describe("The opt-out page in headless Chromium", () => {
  let db: Db;
  let server: TestServer;
  const owner = privateKeyToAccount(generatePrivateKey());
  const wallet = owner.address.toLowerCase();

  before(async () => {
    db = await openDatabase({});
    const clock = createClock();
    await importIndex(db, [{ wallet, kind: "twitter", route: "x-signin", handle: "browsed" }], clock.now());
    // PUBLIC_URL is the server's own address: the page's requests go to the site that served it
    server = await startServer(db, { clock, selfUrl: true });
  });
  after(async () => {
    await server.close();
    await db.close();
  });

  /** A browser on the page with the test provider; `decline` refuses the signature. */
  async function open(decline: boolean): Promise<{ browser: Browser; signed: string[] }> {
    const browser = await launchBrowser({ width: 900, height: 900 });
    const signed: string[] = [];
    await browser.send("Runtime.enable");
    await browser.send("Runtime.addBinding", { name: "walletSign" });
    browser.on("Runtime.bindingCalled", (event: { name: string; payload: string }) => {
      if (event.name !== "walletSign") return;
      const { id, params } = JSON.parse(event.payload) as { id: number; params: [Hex, string] };
      void (async () => {
        const message = hexToString(params[0]);
        signed.push(message);
        assert.equal(params[1].toLowerCase(), wallet, "personal_sign names the connected account");
        const answer = decline ? "null, true" : `${JSON.stringify(await owner.signMessage({ message }))}, false`;
        await browser.send("Runtime.evaluate", { expression: `window.__walletAnswer(${id}, ${answer})` });
      })();
    });
    await browser.send("Page.addScriptToEvaluateOnNewDocument", { source: providerScript(owner.address) });
    await browser.goto(`${server.url}/opt-out`);
    return { browser, signed };
  }

  async function statusAfter(browser: Browser, click: string, until: RegExp): Promise<string> {
    await browser.evaluate(`document.querySelector(${JSON.stringify(click)}).click(); true`);
    for (let i = 0; i < 100; i++) {
      const text: string = await browser.evaluate(`document.getElementById("status").textContent`);
      if (until.test(text)) return text;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return await browser.evaluate(`document.getElementById("status").textContent`);
  }

  test("the page is readable without the script, labelled, and keyboard-reachable", async () => {
    const res = await fetch(`${server.url}/opt-out`);
    const html = await res.text();
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-security-policy") ?? "", /script-src 'self'/);
    assert.match(html, /<noscript>[\s\S]*needs JavaScript[\s\S]*<\/noscript>/);
    assert.match(html, /<script src="opt-out.js" defer><\/script>/, "its only script, served here");
    assert.doesNotMatch(html, /<script>|https?:\/\/(?!localhost)/, "no inline script, nothing from elsewhere");
    const script = await fetch(`${server.url}/opt-out.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get("content-type") ?? "", /^text\/javascript/);
    assert.match(html, /<label><input type="radio" name="action" value="remove" checked>/);
    assert.match(html, /role="status" aria-live="polite"/);
  });

  test("connect, sign, opted out", { timeout: 120_000 }, async (t) => {
    if (!chromiumAvailable(t, "the opt-out page browser test")) return;
    const { browser, signed } = await open(false);
    try {
      assert.match(await statusAfter(browser, "#connect", /Connected/), /Connected/);
      assert.equal(await browser.evaluate(`document.getElementById("wallet").textContent`), owner.address);
      assert.equal(await browser.evaluate(`document.activeElement.id`), "sign", "focus moves to the next step");
      const text = await statusAfter(browser, "#sign", /Done|did not work|declined/);
      assert.match(text, new RegExp(`Done: ${wallet} is opted out`), text);
      assert.equal(signed.length, 1);
      assert.match(signed[0], /wants you to sign in with your Ethereum account/);
      const [row] = await db.query<{ wallet: string }>("SELECT wallet FROM opt_outs");
      assert.equal(row?.wallet, wallet);
    } finally {
      await browser.close();
    }
  });

  test("declining the signature: a clear message, nothing changed", { timeout: 120_000 }, async (t) => {
    if (!chromiumAvailable(t, "the opt-out page browser test")) return;
    const { browser } = await open(true);
    try {
      await statusAfter(browser, "#connect", /Connected/);
      await browser.evaluate(`document.querySelector('input[value="restore"]').click(); true`);
      const text = await statusAfter(browser, "#sign", /declined|Done|did not work/);
      assert.match(text, /You declined the signature: nothing was changed/);
      assert.equal((await db.query("SELECT 1 FROM opt_outs")).length, 1, "still out: the restore was not signed");
    } finally {
      await browser.close();
    }
  });
});
