// The load generator of the reverse cases of npm run bench, as a process of its own: pages the
// crowd for the given seconds (driveReverse) and prints the figures as one JSON line. The bench
// process has driven every lookup case with autocannon by the time the reverse cases run, and its
// heap is large: V8 collected it with a major GC about every 0.7 s through round 1's one-client
// window, 3 to 13 ms each, and every one of them landed in a page's latency as measured by the
// client (README, "The reverse page's round 1"). A process that does nothing else pauses only for
// its own pages.
//
//   node --import tsx bench/reverse-client.ts <url> <api key> <handle> <clients> <seconds>
import process from "node:process";
import { driveReverse } from "./reverse.ts";

const [url, apiKey, handle, clients, seconds] = process.argv.slice(2);
if (!url || !apiKey || !handle || !(Number(clients) > 0) || !(Number(seconds) > 0)) {
  process.stderr.write("usage: bench/reverse-client.ts <url> <api key> <handle> <clients> <seconds>\n");
  process.exit(2);
}
const figures = await driveReverse({ url, apiKey, handle, clients: Number(clients), seconds: Number(seconds) });
process.stdout.write(`${JSON.stringify(figures)}\n`);
