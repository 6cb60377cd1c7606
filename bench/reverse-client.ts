// The load generator of the reverse cases of npm run bench, as a process of its own: pages the
// crowd for the given seconds (driveReverse) and prints the figures as one JSON line. By the time
// the reverse cases run, the bench process has driven every lookup case with autocannon and its
// heap is large: its major GCs (3 to 13 ms, about one every 0.7 s) landed in the page latencies
// it measured. A process that does nothing else pauses only for its own pages.
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
