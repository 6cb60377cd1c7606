// postinstall: two fixes to postgres.js 3.4.9 (the latest release), applied to each of its three
// builds (src/ for Node ESM and Bun, cjs/ for require, cf/ for workerd; Deno loads src/ through
// node_modules). Idempotent: a patched file is left as it is. Drop a fix once a release has it
// (docs/development.md, "postgres.js patched at install"). Plain JavaScript so it runs before anything is compiled.
//
// 1. Rows after an answer cut short: DataRow writes `result[rows++]` with a per-connection `rows`
//    that only CommandComplete resets. A statement that fails after sending rows (an error
//    mid-result, statement_timeout, a terminated backend) leaves `rows` behind, and the next
//    statement on that connection gets holes before its rows: `SELECT 1` answers
//    `[ <2 empty items>, { x: 1 } ]`. ReadyForQuery, which ends every exchange, now resets it.
// 2. A connection that never connects again: closed() and terminate() cancel a pending buffered
//    write with clearImmediate but keep its handle and bytes. write() schedules a flush only when
//    no handle is set, so after a close with a write pending (a storm of terminated backends,
//    where queries retried on one connection land on another that closes in the same tick) the
//    next startup message is appended to the stale bytes and never sent: every connect of that
//    connection waits out connect_timeout, for good. Both now drop the handle and the bytes.
// 3. The connection queues never compact under steady load: Queue.shift() empties its array only
//    when it has drained completely, and remove() searches from the start, so a queue that is
//    never empty at that instant grows without bound and every remove() scans it whole.
//    shift() now compacts once half of the array is spent, and remove() searches from the head.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "node_modules", "postgres");
const MARK = "walletid patch";

const PATCHES = [
  {
    file: "connection.js",
    from: "    clearImmediate(nextWriteTimer)\n    if (socket) {",
    to: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // ${MARK}: nothing of this connection is left to write\n    if (socket) {`,
  },
  {
    file: "connection.js",
    from: "    clearImmediate(nextWriteTimer)\n    socket.removeListener('data', data)",
    to: `    clearImmediate(nextWriteTimer)\n    chunk = nextWriteTimer = null // ${MARK}: a write pending at the close must not block the next connect\n    socket.removeListener('data', data)`,
  },
  {
    file: "connection.js",
    from: "    query = results = errorResponse = null\n    result = new Result()\n    connectTimer.cancel()\n",
    to: `    query = results = errorResponse = null\n    result = new Result()\n    rows = 0 // ${MARK}: a result cut short must not offset the next one\n    connectTimer.cancel()\n`,
  },
  {
    file: "queue.js",
    from: "    remove: (x) => {\n      const index = xs.indexOf(x)\n      return index === -1\n        ? null\n        : (xs.splice(index, 1), x)\n    },",
    to: `    remove: (x) => { // ${MARK}: search from the head only\n      const at = xs.indexOf(x, index)\n      return at === -1\n        ? null\n        : (xs.splice(at, 1), x)\n    },`,
  },
  {
    file: "queue.js",
    from: "      } else {\n        xs[index - 1] = undefined\n      }",
    to: `      } else if (index >= 64 && index * 2 >= xs.length) { // ${MARK}: compact once half is spent\n        xs = xs.slice(index)\n        index = 0\n      } else {\n        xs[index - 1] = undefined\n      }`,
  },
];

export function patchPostgres(root = ROOT) {
  if (!existsSync(root)) return [];
  const done = [];
  for (const build of ["src", "cjs/src", "cf/src"]) {
    for (const file of new Set(PATCHES.map((p) => p.file))) {
      const path = join(root, build, file);
      if (!existsSync(path)) continue;
      const original = readFileSync(path, "utf8");
      let text = original;
      for (const patch of PATCHES.filter((p) => p.file === file)) {
        if (text.includes(patch.to)) continue;
        if (!text.includes(patch.from)) {
          throw new Error(`Cannot patch ${path}: the code to fix is not there (a new postgres.js release? see docs/development.md, "postgres.js patched at install")`);
        }
        text = text.replace(patch.from, patch.to);
      }
      if (text !== original) {
        writeFileSync(path, text);
        done.push(join(build, file));
      }
    }
  }
  return done;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const done = patchPostgres();
  if (done.length > 0) console.log(`postgres.js patched: ${done.join(", ")}`);
}
