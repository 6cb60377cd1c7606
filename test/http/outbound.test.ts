// Requests to user-given URLs (src/http/outbound.ts): every refused URL form and address, at check
// and again at the connection; redirects returned, never followed; time and size bounds; the allow
// list; the proxy; and the Deno/Bun module refusing without one. Real HTTP servers on 127.0.0.1;
// a "public" address reaches them only through the connect hook, which sees the checked address.
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { readConfig } from "../../src/config.ts";
import { OutboundError, type Outbound, type OutboundRequest } from "../../src/http/outbound.ts";
import { createFetchOutbound } from "../../src/http/outbound-fetch.ts";
import { createNodeOutbound, type ConnectTarget, type NodeOutbound } from "../../src/outbound-node.ts";

const PUBLIC_V4 = "93.184.216.34";
const PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946";

interface Local {
  port: number;
  url: string;
  /** Every request that reached the server: method, path, Host header and body. */
  seen: Array<{ method: string; path: string; host: string; body: string }>;
  /** Requests whose response the client cut before the server finished writing it. */
  cut: number;
  close(): Promise<void>;
}

async function startLocal(answer: (req: IncomingMessage, res: ServerResponse, local: Local) => void = (_, res) => res.end("ok")): Promise<Local> {
  const local: Local = { port: 0, url: "", seen: [], cut: 0, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      local.seen.push({ method: req.method ?? "", path: req.url ?? "", host: req.headers.host ?? "", body: Buffer.concat(chunks).toString() });
      res.on("close", () => {
        if (!res.writableFinished) local.cut++;
      });
      answer(req, res, local);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  local.port = (server.address() as AddressInfo).port;
  local.url = `http://127.0.0.1:${local.port}`;
  local.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return local;
}

/** A resolver from a table; a function entry answers per call (the n-th lookup of that name). */
function resolver(table: Record<string, string[] | ((call: number) => string[])>) {
  const calls = new Map<string, number>();
  const lookup = async (hostname: string) => {
    const n = (calls.get(hostname) ?? 0) + 1;
    calls.set(hostname, n);
    const entry = table[hostname];
    if (!entry) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" });
    return typeof entry === "function" ? entry(n) : entry;
  };
  return { lookup, calls: (hostname: string) => calls.get(hostname) ?? 0 };
}

/** An outbound whose connections, whatever address passed the rules, reach `local`; records each. */
function pinnedTo(local: Local, table: Parameters<typeof resolver>[0], allowHosts: string[] = []) {
  const dns = resolver(table);
  const dialed: ConnectTarget[] = [];
  const outbound = createNodeOutbound({
    allowHosts,
    lookup: dns.lookup,
    connect: (target) => {
      dialed.push(target);
      return connect(local.port, "127.0.0.1");
    },
  });
  return { outbound, dialed, dns };
}

const get = (url: string, extra: Partial<OutboundRequest> = {}): OutboundRequest => ({ url, method: "GET", headers: {}, timeoutMs: 3000, maxBytes: 1024, ...extra });

async function refusedWith(work: Promise<unknown>, reason: OutboundError["reason"], message?: RegExp): Promise<OutboundError> {
  const err = await work.then(
    () => assert.fail(`expected an OutboundError (${reason})`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof OutboundError, `an OutboundError: ${String(err)}`);
  assert.equal(err.reason, reason, err.message);
  if (message) assert.match(err.message, message);
  return err;
}

describe("outbound requests on Node.js (pinned)", () => {
  let local: Local;
  const open: NodeOutbound[] = [];
  const track = <T extends { outbound: NodeOutbound }>(made: T): T => (open.push(made.outbound), made);
  before(async () => {
    local = await startLocal();
  });
  after(async () => {
    for (const o of open) await o.close();
    await local.close();
  });

  test("refused URL forms, at check and at send: nothing is resolved, connected or received", async () => {
    const { outbound, dialed, dns } = track(pinnedTo(local, { "public.example": [PUBLIC_V4] }));
    const forms: Array<[string, RegExp]> = [
      ["not a url", /not a valid absolute URL/],
      ["http://public.example/hook", /must use https/],
      ["ftp://public.example/hook", /must use https/],
      ["https://user:pw@public.example/hook", /credentials/],
      ["https://user@public.example/hook", /credentials/],
      ["https://2130706433/hook", /2130706433 is the IP address 127\.0\.0\.1 written in another form/],
      ["https://0177.0.0.1/hook", /written in another form/],
      ["https://0x7f.0.0.1/hook", /written in another form/],
      ["https://0x7f000001/hook", /written in another form/],
      ["https://127.1/hook", /127\.1 is the IP address 127\.0\.0\.1 written in another form/],
      ["https://127.0.0.1./hook", /written in another form/],
      ["https://1572395042/hook", /is the IP address 93\.184\.216\.34 written in another form/],
      ["https://127.0.0.1/hook", /127\.0\.0\.1 is loopback/],
      ["https://10.1.2.3/hook", /private/],
      ["https://169.254.169.254/latest/meta-data/", /link-local/],
      ["https://100.64.0.1/hook", /CGNAT/],
      ["https://0.0.0.0/hook", /this network/],
      ["https://[::1]/hook", /loopback/],
      ["https://[::]/hook", /unspecified/],
      ["https://[::ffff:127.0.0.1]/hook", /written in another form/],
      ["https://[::ffff:7f00:1]/hook", /IPv4-mapped/],
      ["https://[::ffff:5db8:d822]/hook", /IPv4-mapped/],
      ["https://[::7f00:1]/hook", /IPv4-compatible/],
      ["https://[64:ff9b::7f00:1]/hook", /NAT64/],
      ["https://[2002:7f00:1::1]/hook", /6to4/],
      ["https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", /Teredo/],
      ["https://[fe80::1]/hook", /link-local/],
      ["https://[fd12:3456::1]/hook", /unique local/],
      ["https://[ff02::1]/hook", /multicast/],
      ["https://[2001:db8::1]/hook", /documentation/],
    ];
    for (const [url, message] of forms) {
      await refusedWith(outbound.check(url), "url", message);
      await refusedWith(outbound.send(get(url)), "url", message);
    }
    assert.equal(dns.calls("public.example"), 0, "nothing was resolved");
    assert.deepEqual(dialed, [], "nothing was connected");
    assert.deepEqual(local.seen, [], "the server received nothing");
  });

  test("names resolving to any refused address, alone or among public ones, are refused at check and at send", async () => {
    const refusedAddresses: Array<[string, RegExp]> = [
      ["127.0.0.1", /loopback/],
      ["10.0.0.7", /private/],
      ["172.16.5.4", /private/],
      ["192.168.1.1", /private/],
      ["169.254.169.254", /link-local/],
      ["100.64.0.1", /CGNAT/],
      ["224.0.0.251", /multicast/],
      ["0.0.0.0", /this network/],
      ["255.255.255.255", /broadcast/],
      ["192.0.2.1", /documentation/],
      ["198.51.100.1", /documentation/],
      ["203.0.113.9", /documentation/],
      ["198.18.0.1", /benchmarking/],
      ["::1", /loopback/],
      ["::", /unspecified/],
      ["::ffff:127.0.0.1", /IPv4-mapped/],
      ["::ffff:93.184.216.34", /IPv4-mapped/],
      ["64:ff9b::a00:1", /NAT64/],
      ["2002:a00:1::1", /6to4/],
      ["2001:0:4136:e378::1", /Teredo/],
      ["2001:db8::1", /documentation/],
      ["fc00::1", /unique local/],
      ["fd12:3456::1", /unique local/],
      ["fe80::1", /link-local/],
      ["ff02::1", /multicast/],
    ];
    const table: Record<string, string[]> = {};
    refusedAddresses.forEach(([address], i) => {
      table[`alone${i}.example`] = [address];
      table[`among${i}.example`] = [PUBLIC_V4, PUBLIC_V6, address];
    });
    table["empty.example"] = [];
    const { outbound, dialed } = track(pinnedTo(local, table));
    for (const [i, [address, reason]] of refusedAddresses.entries()) {
      for (const host of [`alone${i}.example`, `among${i}.example`]) {
        const message = new RegExp(`${host.replace(".", "\\.")} resolves to ${address.replace(/\./g, "\\.")} \\(.*${reason.source}`);
        await refusedWith(outbound.check(`https://${host}/hook`), "address", message);
        await refusedWith(outbound.send(get(`https://${host}/hook`)), "address", message);
      }
    }
    await refusedWith(outbound.check("https://empty.example/hook"), "address", /has no addresses/);
    await refusedWith(outbound.send(get("https://empty.example/hook")), "address", /has no addresses/);
    await refusedWith(outbound.check("https://nowhere.example/hook"), "network", /could not be resolved/);
    await refusedWith(outbound.send(get("https://nowhere.example/hook")), "network");
    assert.deepEqual(dialed, [], "nothing was connected");
    assert.deepEqual(local.seen, [], "the server received nothing");
  });

  test("the address checked is the address connected to: a name that answers public at check and 127.0.0.1 at send is refused at send", async () => {
    const { outbound, dialed, dns } = track(pinnedTo(local, { "rebind.example": (n) => (n === 1 ? [PUBLIC_V4] : ["127.0.0.1"]) }));
    await outbound.check("https://rebind.example/hook");
    await refusedWith(outbound.send(get("https://rebind.example/hook")), "address", /rebind\.example resolves to 127\.0\.0\.1 \(loopback\)/);
    assert.equal(dns.calls("rebind.example"), 2, "resolved at the check, and again for the connection");
    assert.deepEqual(dialed, [], "nothing was connected");
    assert.deepEqual(local.seen, [], "the server received nothing");
  });

  test("a public answer: the connection goes to the checked address, with the URL's host; a public IP literal too", async () => {
    const { outbound, dialed, dns } = track(pinnedTo(local, { "hook.example": [PUBLIC_V6, PUBLIC_V4] }));
    await outbound.check("https://hook.example/events");
    const res = await outbound.send({ ...get("https://hook.example/events?x=1"), method: "POST", headers: { "Content-Type": "application/json" }, body: '{"a":1}' });
    assert.equal(res.status, 200);
    assert.equal(new TextDecoder().decode(res.body), "ok");
    assert.deepEqual(dialed, [{ hostname: "hook.example", address: PUBLIC_V6, port: 443, protocol: "https:" }]);
    assert.equal(dns.calls("hook.example"), 2);
    assert.deepEqual(local.seen.at(-1), { method: "POST", path: "/events?x=1", host: "hook.example", body: '{"a":1}' });
    await outbound.send(get(`https://${PUBLIC_V4}:8443/literal`));
    assert.deepEqual(dialed.at(-1), { hostname: PUBLIC_V4, address: PUBLIC_V4, port: 8443, protocol: "https:" });
    assert.equal(local.seen.at(-1)?.path, "/literal");
  });

  test("every address passed: when the first refuses the connection, the next one gets it", async () => {
    const dns = resolver({ "two.example": [PUBLIC_V6, PUBLIC_V4] });
    const dialed: string[] = [];
    const outbound = createNodeOutbound({
      lookup: dns.lookup,
      // the IPv6 address is unreachable here: a closed port answers it
      connect: (target) => (dialed.push(target.address), connect(target.address === PUBLIC_V6 ? 1 : local.port, "127.0.0.1")),
    });
    open.push(outbound);
    assert.equal((await outbound.send(get("https://two.example/fallback"))).status, 200);
    assert.deepEqual(dialed, [PUBLIC_V6, PUBLIC_V4]);
    assert.equal(local.seen.at(-1)?.path, "/fallback");
  });

  test("a redirect is returned, and its target never requested", async () => {
    const target = await startLocal();
    const mover = await startLocal((_, res) => res.writeHead(302, { Location: `${target.url}/stolen` }).end());
    try {
      const { outbound } = track(pinnedTo(mover, { "moved.example": [PUBLIC_V4] }));
      const res = await outbound.send(get("https://moved.example/hook"));
      assert.equal(res.status, 302);
      assert.equal(res.headers.get("location"), `${target.url}/stolen`);
      assert.equal(mover.seen.length, 1);
      assert.deepEqual(target.seen, [], "the redirect's target received nothing");
    } finally {
      await mover.close();
      await target.close();
    }
  });

  test("the whole exchange is time-bounded: a lookup, an answer or a body that does not finish is cut at timeoutMs", async () => {
    const stalled = await startLocal((req, res) => {
      if (req.url === "/trickle") {
        res.writeHead(200);
        res.write("x");
        return; // never ends
      }
      // never answers
    });
    try {
      const hanging = createNodeOutbound({ lookup: () => new Promise<string[]>(() => {}) });
      open.push(hanging);
      const { outbound } = track(pinnedTo(stalled, { "slow.example": [PUBLIC_V4] }));
      for (const [o, url] of [
        [hanging, "https://hanging.example/hook"],
        [outbound, "https://slow.example/silent"],
        [outbound, "https://slow.example/trickle"],
      ] as Array<[Outbound, string]>) {
        const started = Date.now();
        await refusedWith(o.send(get(url, { timeoutMs: 500 })), "timeout", /within 500 ms/);
        const took = Date.now() - started;
        assert.ok(took >= 450 && took < 2500, `${url} cut after about 500 ms: ${took} ms`);
      }
      assert.equal(stalled.seen.length, 2);
    } finally {
      await stalled.close();
    }
  });

  test("the body is size-bounded on the bytes read: past maxBytes the request is cut", async () => {
    const big = await startLocal((req, res) => {
      res.writeHead(200, { "Content-Type": "application/octet-stream" });
      if (req.url === "/fits") return res.end(Buffer.alloc(1024, 1));
      // chunked, no Content-Length, far more than the bound
      let sent = 0;
      const more = () => {
        while (sent < 8 * 1024 * 1024) {
          sent += 16 * 1024;
          if (!res.write(Buffer.alloc(16 * 1024, 2))) return void res.once("drain", more);
        }
        res.end();
      };
      more();
    });
    try {
      const { outbound } = track(pinnedTo(big, { "big.example": [PUBLIC_V4] }));
      const fits = await outbound.send(get("https://big.example/fits", { maxBytes: 1024 }));
      assert.equal(fits.body.byteLength, 1024);
      await refusedWith(outbound.send(get("https://big.example/huge", { maxBytes: 64 * 1024 })), "too_large", /larger than 65536 bytes/);
      for (let i = 0; i < 100 && big.cut === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(big.cut, 1, "the server's 8 MB answer was cut before it finished");
    } finally {
      await big.close();
    }
  });

  test("an allow-listed host may use http and a private address (the real connector, no hook)", async () => {
    const outbound = createNodeOutbound({ allowHosts: ["127.0.0.1", "LocalHost"], lookup: async () => ["127.0.0.1"] });
    open.push(outbound);
    await outbound.check(`${local.url}/dev`);
    const res = await outbound.send({ ...get(`${local.url}/dev`), method: "POST", body: "hello" });
    assert.equal(res.status, 200);
    assert.deepEqual(local.seen.at(-1), { method: "POST", path: "/dev", host: `127.0.0.1:${local.port}`, body: "hello" });
    const named = await outbound.send(get(`http://localhost:${local.port}/named`));
    assert.equal(named.status, 200);
    assert.equal(local.seen.at(-1)?.host, `localhost:${local.port}`);
    // another host is not exempt
    await refusedWith(outbound.check(`http://127.0.0.2:${local.port}/dev`), "url", /must use https/);
    await refusedWith(outbound.send(get(`https://127.0.0.2:${local.port}/dev`)), "url", /loopback/);
  });

  test("OUTBOUND_PROXY: requests go through the proxy (CONNECT), which decides where they may go; known-bad ones never reach it", async () => {
    const tunnels: string[] = [];
    const proxy = createServer();
    proxy.on("connect", (req: IncomingMessage, client: Socket) => {
      tunnels.push(req.url ?? "");
      const [host, port] = (req.url ?? "").split(":");
      const upstream = connect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.pipe(client).pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    try {
      const outbound = createNodeOutbound({
        allowHosts: ["127.0.0.1"],
        proxyUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        lookup: resolver({ "private.example": [PUBLIC_V4, "192.168.0.10"] }).lookup,
      });
      open.push(outbound);
      const res = await outbound.send(get(`${local.url}/proxied`));
      assert.equal(res.status, 200);
      assert.deepEqual(tunnels, [`127.0.0.1:${local.port}`]);
      assert.equal(local.seen.at(-1)?.path, "/proxied");
      await refusedWith(outbound.send(get("https://0x0a000001/hook")), "url", /10\.0\.0\.1 written in another form/);
      await refusedWith(outbound.send(get("https://private.example/hook")), "address", /192\.168\.0\.10 \(private\)/);
      assert.equal(tunnels.length, 1, "a refused form, or a name known to resolve to a refused address, never reaches the proxy");
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });
});

describe("outbound requests where the connection cannot be pinned (Deno, Bun)", () => {
  let local: Local;
  before(async () => {
    local = await startLocal((req, res) => {
      if (req.url === "/moved") return res.writeHead(301, { Location: `${local.url}/elsewhere` }).end();
      if (req.url === "/big") return res.end(Buffer.alloc(4096));
      res.end("ok");
    });
  });
  after(() => local.close());

  test("without OUTBOUND_PROXY every request is refused (unpinnable), before anything is resolved or sent", async () => {
    const dns = resolver({ "hook.example": [PUBLIC_V4] });
    const outbound = createFetchOutbound({ runtime: "Deno", allowHosts: ["127.0.0.1"], resolve: dns.lookup });
    await refusedWith(outbound.check("https://hook.example/hook"), "unpinnable", /Deno cannot connect to the address it checked.*OUTBOUND_PROXY/);
    await refusedWith(outbound.send(get("https://hook.example/hook")), "unpinnable");
    await refusedWith(outbound.send(get(`${local.url}/dev`)), "unpinnable");
    assert.equal(dns.calls("hook.example"), 0);
    assert.deepEqual(local.seen, []);
  });

  test("with a proxy: the same URL rules, redirects returned, bodies bounded, and the request sent through the proxy's fetch", async () => {
    const dns = resolver({ "hook.example": [PUBLIC_V4], "private.example": [PUBLIC_V4, "10.0.0.1"] });
    const through: Array<{ url: string; redirect?: RequestRedirect }> = [];
    const outbound = createFetchOutbound({
      runtime: "Bun",
      allowHosts: ["127.0.0.1"],
      resolve: dns.lookup,
      proxiedFetch: (url, init) => (through.push({ url, redirect: init.redirect }), fetch(url, init)),
    });
    await outbound.check("https://hook.example/hook");
    await refusedWith(outbound.check("https://private.example/hook"), "address", /10\.0\.0\.1 \(private\)/);
    await refusedWith(outbound.send(get("https://[::1]/hook")), "url", /loopback/);
    await refusedWith(outbound.send(get("http://hook.example/hook")), "url", /must use https/);
    await refusedWith(outbound.send(get("https://private.example/hook")), "address", /10\.0\.0\.1 \(private\)/);
    assert.equal(through.length, 0, "refused forms never reach the proxy");
    const moved = await outbound.send(get(`${local.url}/moved`));
    assert.equal(moved.status, 301);
    await refusedWith(outbound.send(get(`${local.url}/big`, { maxBytes: 1024 })), "too_large");
    assert.deepEqual(local.seen.map((s) => s.path), ["/moved", "/big"], "the redirect's target was never requested");
    assert.deepEqual(through.map((t) => t.redirect), ["manual", "manual"]);
  });
});

test("configuration: WEBHOOK_ALLOW_HOSTS and OUTBOUND_PROXY", () => {
  assert.deepEqual(readConfig({}).outbound, { allowHosts: [], proxyUrl: undefined });
  assert.deepEqual(readConfig({ WEBHOOK_ALLOW_HOSTS: "localhost, 127.0.0.1,::1", OUTBOUND_PROXY: "http://proxy.internal:3128" }).outbound, {
    allowHosts: ["localhost", "127.0.0.1", "::1"],
    proxyUrl: "http://proxy.internal:3128",
  });
  assert.throws(() => readConfig({ WEBHOOK_ALLOW_HOSTS: "http://localhost/" }), /Cannot start: WEBHOOK_ALLOW_HOSTS must be comma-separated host names or IP addresses/);
  assert.throws(() => readConfig({ OUTBOUND_PROXY: "socks5://proxy:1080" }), /Cannot start: OUTBOUND_PROXY must be an http:\/\/ or https:\/\/ URL/);
});
