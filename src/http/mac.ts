// HMAC-SHA-256 of the server's tamper-evident tokens (reverse-lookup cursors, key-recovery
// challenges), computed in the calling thread by @noble/hashes (pure JavaScript, the library viem
// hashes with). Web Crypto's HMAC is asynchronous: Node runs each one on libuv's thread pool, and
// the hand-over and the wake-up back cost about 35 µs a call on an idle 2-core machine, more under
// load, against about 5 µs here; a reverse page signs one cursor and checks another.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";

export interface Mac {
  sign: (message: string) => Uint8Array;
  /** Whether `mac` is the message's, compared in constant time. */
  verify: (mac: Uint8Array, message: string) => boolean;
}

export function hmacSha256(secret: string): Mac {
  // the key's inner and outer blocks are hashed once; each message starts from a copy of them
  const keyed = hmac.create(sha256, new TextEncoder().encode(secret));
  const sign = (message: string) => keyed.clone().update(new TextEncoder().encode(message)).digest();
  return {
    sign,
    verify(mac, message) {
      const expected = sign(message);
      if (mac.length !== expected.length) return false;
      let differ = 0;
      for (let i = 0; i < expected.length; i++) differ |= mac[i] ^ expected[i];
      return differ === 0;
    },
  };
}
