// A TCP proxy in front of PostgreSQL that a test controls: it passes bytes through, refuses
// connections, holds every byte (a network partition), cuts connections, or answers new ones
// with a PostgreSQL startup error, so database faults can be made on demand.
import { createServer, Socket, type Server } from "node:net";

export type ProxyMode =
  /** bytes flow both ways */
  | "pass"
  /** the port is closed: new connections get ECONNREFUSED; open ones are cut */
  | "refuse"
  /** a partition: connections are accepted, but no byte moves either way until the mode changes */
  | "blackhole"
  /** every open connection is reset, and new ones are reset as soon as they send anything */
  | "drop";

export interface TcpProxy {
  readonly port: number;
  readonly url: string;
  mode(): ProxyMode;
  setMode(mode: ProxyMode): Promise<void>;
  /** Cuts (resets) every connection open now; new ones are served as the mode says. */
  terminate(): void;
  /**
   * New connections get a PostgreSQL FATAL ErrorResponse with this SQLSTATE after their startup
   * message, as a server that is starting up (57P03) or full (53300) answers; undefined stops it.
   */
  failStartups(sqlstate: string | undefined, message?: string): void;
  /** Connections accepted so far. */
  accepted(): number;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream?: Socket;
}

/** A PostgreSQL ErrorResponse message ('E'): severity FATAL, the SQLSTATE and a message. */
export function errorResponse(sqlstate: string, message: string): Buffer {
  const fields = Buffer.concat(
    [["S", "FATAL"], ["V", "FATAL"], ["C", sqlstate], ["M", message]].map(([type, value]) => Buffer.from(`${type}${value}\0`)),
  );
  const body = Buffer.concat([fields, Buffer.from([0])]);
  const header = Buffer.alloc(5);
  header.write("E", 0);
  header.writeUInt32BE(body.length + 4, 1);
  return Buffer.concat([header, body]);
}

/** Listens on 127.0.0.1 (an ephemeral port) and forwards to target. */
export async function startTcpProxy(target: { host: string; port: number }, database = "test"): Promise<TcpProxy> {
  let current: ProxyMode = "pass";
  let startupError: Buffer | undefined;
  let count = 0;
  const pairs = new Set<Pair>();
  // every socket still open, the half-closed ones too (server.close waits for them)
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  };
  let server: Server;
  let port = 0;

  const cut = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream?.resetAndDestroy();
  };

  // one side closed in order: what it sent is delivered, then the other side is closed too
  const close = (pair: Pair) => {
    pairs.delete(pair);
    pair.client.end();
    pair.upstream?.end();
  };

  // While held (blackhole), neither side is read: what was sent waits, as on a partitioned network.
  const hold = (pair: Pair, held: boolean) => {
    for (const s of [pair.client, pair.upstream]) {
      if (!s) continue;
      if (held) s.pause();
      else s.resume();
    }
  };

  const connectUpstream = (pair: Pair) => {
    const upstream = new Socket();
    track(upstream);
    pair.upstream = upstream;
    upstream.on("error", () => cut(pair));
    upstream.on("close", () => close(pair));
    upstream.connect(target.port, target.host);
    pair.client.pipe(upstream);
    upstream.pipe(pair.client);
    if (current === "blackhole") hold(pair, true);
  };

  const onConnection = (client: Socket) => {
    count++;
    track(client);
    const pair: Pair = { client };
    pairs.add(pair);
    client.on("error", () => cut(pair));
    client.on("close", () => close(pair));
    if (current === "drop") {
      client.once("data", () => cut(pair));
      return;
    }
    if (startupError) {
      const error = startupError;
      client.once("data", () => {
        client.end(error);
        pairs.delete(pair);
      });
      return;
    }
    if (current === "blackhole") client.pause();
    connectUpstream(pair);
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = createServer({ pauseOnConnect: false }, onConnection);
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        port = (server.address() as { port: number }).port;
        resolve();
      });
    });
  const unlisten = () => new Promise<void>((resolve) => server.close(() => resolve()));

  await listen();

  const proxy: TcpProxy = {
    get port() {
      return port;
    },
    get url() {
      return `postgres://postgres@127.0.0.1:${port}/${database}`;
    },
    mode: () => current,
    async setMode(mode) {
      if (mode === current) return;
      const previous = current;
      current = mode;
      if (previous === "refuse") {
        // the same port again: a client keeps its URL
        for (let attempt = 0; ; attempt++) {
          try {
            await listen();
            break;
          } catch (error) {
            if (attempt >= 50) throw error;
            await new Promise((resolve) => setTimeout(resolve, 20));
          }
        }
      }
      if (mode === "refuse") {
        const closing = unlisten();
        proxy.terminate();
        await closing;
      } else if (mode === "drop") {
        proxy.terminate();
      } else {
        for (const pair of pairs) hold(pair, mode === "blackhole");
      }
    },
    terminate() {
      pairs.clear();
      for (const socket of [...sockets]) socket.resetAndDestroy();
    },
    failStartups(sqlstate, message = "the database system is starting up") {
      startupError = sqlstate ? errorResponse(sqlstate, message) : undefined;
    },
    accepted: () => count,
    async close() {
      proxy.terminate();
      if (current !== "refuse") await unlisten();
    },
  };
  return proxy;
}
