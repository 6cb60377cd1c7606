// Which IP addresses a request to a user-given URL may reach (src/http/outbound-rules.ts): public
// unicast only. Everything special-use (RFC 6890 and successors) is refused, and so is every IPv6
// form that embeds an IPv4 address (IPv4-mapped and -compatible, NAT64, 6to4, Teredo), whatever it embeds.

/** The four octets of a dotted IPv4 address, or undefined. */
export function parseIPv4(text: string): number[] | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  const octets = parts.map((p) => (/^\d{1,3}$/.test(p) ? Number(p) : NaN));
  return octets.every((o) => o >= 0 && o <= 255) ? octets : undefined;
}

/** The eight 16-bit groups of an IPv6 address (with an optional trailing dotted IPv4), or undefined. */
export function parseIPv6(text: string): number[] | undefined {
  let s = text.replace(/^\[|\]$/g, "").toLowerCase();
  const zone = s.indexOf("%");
  if (zone !== -1) s = s.slice(0, zone);
  if (!/^[0-9a-f:.]+$/.test(s) || !s.includes(":")) return undefined;
  const lastColon = s.lastIndexOf(":");
  if (s.slice(lastColon + 1).includes(".")) {
    // a trailing dotted IPv4 address is the last two groups
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    s = `${s.slice(0, lastColon + 1)}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  const group = (g: string) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN);
  const head = halves[0] ? halves[0].split(":").map(group) : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":").map(group) : [];
  const known = head.length + rest.length;
  let groups: number[];
  if (halves.length === 2) {
    if (known > 7) return undefined;
    groups = [...head, ...new Array(8 - known).fill(0), ...rest];
  } else {
    groups = head;
  }
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

function v4InRange(o: number[], base: number[], bits: number): boolean {
  const a = ((o[0] << 24) | (o[1] << 16) | (o[2] << 8) | o[3]) >>> 0;
  const b = ((base[0] << 24) | (base[1] << 16) | (base[2] << 8) | base[3]) >>> 0;
  const mask = bits === 0 ? 0 : (~0 << (32 - bits)) >>> 0;
  return (a & mask) === (b & mask);
}

const V4_SPECIAL: Array<[number[], number, string]> = [
  [[0, 0, 0, 0], 8, "this network"],
  [[10, 0, 0, 0], 8, "private"],
  [[100, 64, 0, 0], 10, "shared (CGNAT)"],
  [[127, 0, 0, 0], 8, "loopback"],
  [[169, 254, 0, 0], 16, "link-local"],
  [[172, 16, 0, 0], 12, "private"],
  [[192, 0, 0, 0], 24, "IETF protocol assignments"],
  [[192, 0, 2, 0], 24, "documentation"],
  [[192, 31, 196, 0], 24, "AS112"],
  [[192, 52, 193, 0], 24, "AMT"],
  [[192, 88, 99, 0], 24, "6to4 relay anycast"],
  [[192, 168, 0, 0], 16, "private"],
  [[192, 175, 48, 0], 24, "AS112"],
  [[198, 18, 0, 0], 15, "benchmarking"],
  [[198, 51, 100, 0], 24, "documentation"],
  [[203, 0, 113, 0], 24, "documentation"],
  [[224, 0, 0, 0], 4, "multicast"],
  [[240, 0, 0, 0], 4, "reserved"],
];

function v6InRange(g: number[], prefix: number[], bits: number): boolean {
  for (let i = 0; i < 8 && bits > 0; i++, bits -= 16) {
    const take = Math.min(16, bits);
    const mask = (0xffff << (16 - take)) & 0xffff;
    if ((g[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

const V6_SPECIAL: Array<[number[], number, string]> = [
  [[0, 0, 0, 0, 0, 0, 0, 0], 96, "unspecified, loopback or IPv4-compatible"],
  [[0, 0, 0, 0, 0, 0xffff], 96, "IPv4-mapped"],
  [[0, 0, 0, 0, 0xffff, 0], 96, "IPv4-translated"],
  [[0x64, 0xff9b], 96, "NAT64"],
  [[0x64, 0xff9b, 1], 48, "NAT64 (local use)"],
  [[0x100], 64, "discard-only"],
  [[0x2001, 0], 32, "Teredo"],
  [[0x2001], 23, "IETF protocol assignments"],
  [[0x2001, 0xdb8], 32, "documentation"],
  [[0x2002], 16, "6to4"],
  [[0x3fff], 20, "documentation"],
  [[0x5f00], 16, "segment routing"],
  [[0xfc00], 7, "unique local (private)"],
  [[0xfe80], 10, "link-local"],
  [[0xfec0], 10, "site-local"],
  [[0xff00], 8, "multicast"],
];

/** Why an address is not public, or undefined when it is a public unicast address. */
export function nonPublicReason(address: string): string | undefined {
  const v4 = parseIPv4(address);
  if (v4) {
    if (v4.join(".") === "255.255.255.255") return "broadcast";
    return V4_SPECIAL.find(([base, bits]) => v4InRange(v4, base, bits))?.[2];
  }
  const v6 = parseIPv6(address);
  if (!v6) return "not an IP address";
  // only global unicast (2000::/3) is public at all
  if ((v6[0] & 0xe000) !== 0x2000) {
    return V6_SPECIAL.find(([prefix, bits]) => v6InRange(v6, prefix, bits))?.[2] ?? "not global unicast";
  }
  return V6_SPECIAL.find(([prefix, bits]) => v6InRange(v6, prefix, bits))?.[2];
}

/** True for a literal IP address as a URL host (dotted IPv4, or bracketed IPv6). */
export function isIpLiteralHost(hostname: string): boolean {
  return parseIPv4(hostname) !== undefined || hostname.startsWith("[");
}
