// The HMAC-SHA-256 of cursors and recovery challenges (src/http/mac.ts) against Web Crypto's, the
// implementation it replaced: tokens issued before the change still verify after it, and back.
import assert from "node:assert/strict";
import { test } from "node:test";
import { hmacSha256 } from "../../src/http/mac.ts";

async function webCryptoMac(secret: string, message: string): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message)));
}

// short and long secrets (over the 64-byte block, which HMAC hashes first), empty and multi-block
// messages, and text outside ASCII
const SECRETS = ["k", "a 43-character secret like the generated ones", "s".repeat(100)];
const MESSAGES = ["", "c1.eyJrIjoidHdpdHRlciJ9", "x402-recover|0xab|2026-11-27T12:00:00.000Z|walletid.example", "é→🙂".repeat(40)];

test("the MAC of every message equals Web Crypto's under the same secret, the same after many messages", async () => {
  for (const secret of SECRETS) {
    const mac = hmacSha256(secret);
    for (let round = 0; round < 2; round++) {
      for (const message of MESSAGES) {
        assert.deepEqual(mac.sign(message), await webCryptoMac(secret, message), `${secret.length}-char secret, ${JSON.stringify(message.slice(0, 20))}`);
      }
    }
  }
});

test("verify accepts Web Crypto's MAC and refuses any other: one bit, a truncation, an extension, another secret", async () => {
  const secret = SECRETS[1];
  const mac = hmacSha256(secret);
  const message = MESSAGES[1];
  const good = await webCryptoMac(secret, message);
  assert.equal(mac.verify(good, message), true);
  assert.equal(mac.verify(good, `${message}x`), false, "another message");
  for (const at of [0, 15, 31]) {
    const flipped = Uint8Array.from(good);
    flipped[at] ^= 1;
    assert.equal(mac.verify(flipped, message), false, `bit flipped in byte ${at}`);
  }
  assert.equal(mac.verify(good.subarray(0, 31), message), false, "truncated");
  assert.equal(mac.verify(Uint8Array.from([...good, 0]), message), false, "extended");
  assert.equal(mac.verify(new Uint8Array(0), message), false, "empty");
  assert.equal(hmacSha256("another secret").verify(good, message), false, "another secret");
});
