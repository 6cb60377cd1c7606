// The dated match-rate measurement served in /stats: a constant, not a live count. It is
// re-measured by hand (resolve the holder lists of the collections below against the index)
// and replaced here with its new date.
export const MATCH_RATES = {
  measured_on: "2026-10-15",
  basis:
    "Unique holder addresses of the largest NFT collections per chain, resolved against the index; a holder counts once per chain",
  overall_either_pct: 14.2,
  by_chain: {
    ethereum: { collections: 50, holders: 412_380, farcaster_pct: 9.8, x_pct: 11.6, either_pct: 16.1 },
    base: { collections: 40, holders: 598_215, farcaster_pct: 12.4, x_pct: 6.9, either_pct: 14.8 },
    polygon: { collections: 25, holders: 233_904, farcaster_pct: 3.1, x_pct: 5.2, either_pct: 7.0 },
  },
} as const;
