// CPU time of the processes behind a local HTTP server, from /proc (Linux): the process listening
// on the port and the PostgreSQL backends its connections talk to. Benchmarks divide it by the
// calls served, a steadier figure than calls per second on a shared machine.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const TICKS_PER_SECOND = 100;
const LISTEN = "0A";

interface Socket {
  localPort: number;
  remotePort: number;
  state: string;
  inode: string;
}

function sockets(): Socket[] {
  const rows: Socket[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const port = (address: string) => parseInt(address.slice(address.lastIndexOf(":") + 1), 16);
      rows.push({ localPort: port(f[1]), remotePort: port(f[2]), state: f[3], inode: f[9] });
    }
  }
  return rows;
}

/** Every process's socket inodes, by pid (processes whose fds cannot be read are left out). */
function socketOwners(): Map<string, number> {
  const owners = new Map<string, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (link.startsWith("socket:[")) owners.set(link.slice(8, -1), Number(entry));
      } catch {
        // the fd closed meanwhile
      }
    }
  }
  return owners;
}

/** The pid listening on `port`, and the pids at the other end of its connections to `databasePort`. */
export function serverProcesses(port: number, databasePort = 5432): { server: number | null; database: number[] } {
  const all = sockets();
  const owners = socketOwners();
  const listener = all.find((s) => s.localPort === port && s.state === LISTEN);
  const server = listener ? (owners.get(listener.inode) ?? null) : null;
  if (server === null) return { server, database: [] };
  const ours = new Set([...owners].filter(([, pid]) => pid === server).map(([inode]) => inode));
  const clientPorts = new Set(all.filter((s) => ours.has(s.inode) && s.remotePort === databasePort).map((s) => s.localPort));
  const database = new Set<number>();
  for (const s of all) {
    if (s.localPort !== databasePort || !clientPorts.has(s.remotePort)) continue;
    const pid = owners.get(s.inode);
    if (pid !== undefined && pid !== server) database.add(pid);
  }
  return { server, database: [...database] };
}

/** User + system CPU seconds of each pid (0 for one that is gone or unreadable). */
export function cpuSeconds(pids: number[]): Map<number, number> {
  const times = new Map<number, number>();
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      // fields after the command name, which is in parentheses and may hold spaces
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      times.set(pid, (Number(f[11]) + Number(f[12])) / TICKS_PER_SECOND);
    } catch {
      times.set(pid, 0);
    }
  }
  return times;
}

/** CPU seconds the pids spent between two cpuSeconds readings (pids only in `after` count from 0). */
export function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, t] of after) total += Math.max(0, t - (before.get(pid) ?? 0));
  return total;
}
