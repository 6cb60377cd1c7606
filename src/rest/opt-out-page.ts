// The opt-out page and its one script, both served by the service (nothing from elsewhere): a
// person connects a browser wallet (EIP-1193 window.ethereum), signs the challenge with
// personal_sign and sees the result. Without a script or a wallet, the page says what is needed.

const STYLE = `
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; background: #f4f5f7; color: #1c2024; margin: 0; }
  main { max-width: 36rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem 2.25rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin: 0 0 .5rem; }
  .brand { font-weight: 700; color: #1d5fd1; letter-spacing: .02em; margin-bottom: 1rem; }
  fieldset { border: 1px solid #d4d7dc; border-radius: 8px; margin: 1.25rem 0 0; padding: .5rem 1rem .75rem; }
  legend { font-weight: 600; padding: 0 .3rem; }
  label { display: block; margin: .3rem 0; }
  .buttons { display: flex; gap: .75rem; margin-top: 1.25rem; flex-wrap: wrap; }
  button { font: inherit; font-weight: 600; padding: .6rem 1.4rem; border-radius: 8px; border: 1px solid #1d5fd1; background: #1d5fd1; color: #fff; cursor: pointer; }
  button:disabled { background: #b8bcc2; border-color: #b8bcc2; cursor: not-allowed; }
  button:focus-visible, input:focus-visible { outline: 3px solid #f0a500; outline-offset: 2px; }
  #wallet { font-family: ui-monospace, monospace; word-break: break-all; }
  #status { margin-top: 1.25rem; padding: .6rem .8rem; border-radius: 8px; background: #eef3fc; min-height: 1.5em; }
  #status.error { background: #fde8e6; border: 1px solid #e59a90; }
  #status.done { background: #e6f6ea; border: 1px solid #8fce9f; }
  .note { color: #555; font-size: .9rem; margin-top: 1.5rem; }
  noscript p { background: #fff4d6; border: 1px solid #e6c35c; border-radius: 8px; padding: .6rem .8rem; }
`;

export const OPT_OUT_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Remove your wallet from walletid</title>
<style>${STYLE}</style>
<script src="opt-out.js" defer></script>
</head>
<body>
<main>
<div class="brand">walletid</div>
<h1>Remove your wallet from walletid</h1>
<p>walletid answers which social accounts belong to a wallet. If the wallet is yours, you can take it out:
from the next request on, every lookup answers it as never seen. It is free, and you can restore it the same way.</p>
<p>You need a browser wallet holding the address (for example a browser extension). You sign a message with it;
signing moves no funds and costs nothing.</p>
<noscript><p>This page needs JavaScript to talk to your browser wallet. Without it, ask
<code>POST /api/opt-out/challenge</code> with <code>{"wallet": "0x…"}</code>, sign the returned message with the
wallet (personal_sign) and send <code>{"message", "signature"}</code> to <code>POST /api/opt-out</code>.</p></noscript>
<div class="buttons">
<button type="button" id="connect">Connect wallet</button>
</div>
<p>Wallet: <span id="wallet">not connected</span></p>
<fieldset>
<legend>What to do</legend>
<label><input type="radio" name="action" value="remove" checked> Remove this wallet from walletid</label>
<label><input type="radio" name="action" value="restore"> Restore this wallet (show it again)</label>
</fieldset>
<div class="buttons">
<button type="button" id="sign" disabled>Sign and send</button>
</div>
<p id="status" role="status" aria-live="polite">Connect your wallet to begin.</p>
<p class="note">Lost the keys of a wallet that is yours? Write to the operator of this service: they can take it out for you.</p>
</main>
</body>
</html>`;

/** The page's script: plain browser JavaScript, no dependencies. */
export const OPT_OUT_SCRIPT = `"use strict";
(function () {
  var account = null;
  function $(id) { return document.getElementById(id); }
  function show(text, kind) {
    var status = $("status");
    status.textContent = text;
    status.className = kind || "";
  }
  function toHex(text) {
    var bytes = new TextEncoder().encode(text);
    var hex = "0x";
    for (var i = 0; i < bytes.length; i++) hex += bytes[i].toString(16).padStart(2, "0");
    return hex;
  }
  function chosenAction() {
    var checked = document.querySelector('input[name="action"]:checked');
    return checked ? checked.value : "remove";
  }
  async function post(path, body) {
    var res = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    var data = await res.json().catch(function () { return {}; });
    if (!res.ok) throw new Error(data.error || ("The service answered HTTP " + res.status));
    return data;
  }
  async function connect() {
    if (!window.ethereum) {
      show("No browser wallet found: this page needs one (an EIP-1193 wallet such as a browser extension) holding the address.", "error");
      return;
    }
    try {
      var accounts = await window.ethereum.request({ method: "eth_requestAccounts" });
      if (!accounts || accounts.length === 0) throw new Error("the wallet shared no account");
      account = accounts[0];
      $("wallet").textContent = account;
      $("sign").disabled = false;
      show("Connected. Choose what to do, then sign.");
      $("sign").focus();
    } catch (err) {
      if (err && err.code === 4001) show("You declined to connect the wallet: nothing was changed.", "error");
      else show("Cannot connect the wallet: " + (err && err.message ? err.message : String(err)), "error");
    }
  }
  async function sign() {
    if (!account) return;
    var action = chosenAction();
    $("sign").disabled = true;
    try {
      show("Asking walletid for a message to sign…");
      var challenge = await post("api/opt-out/challenge", { wallet: account, action: action });
      show("Sign the message in your wallet…");
      var signature;
      try {
        signature = await window.ethereum.request({ method: "personal_sign", params: [toHex(challenge.message), account] });
      } catch (err) {
        if (err && err.code === 4001) {
          show("You declined the signature: nothing was changed. Sign to " + (action === "remove" ? "remove" : "restore") + " the wallet.", "error");
          return;
        }
        throw err;
      }
      show("Sending the signature…");
      var result = await post("api/opt-out", { message: challenge.message, signature: signature });
      show(result.opted_out
        ? "Done: " + result.wallet + " is opted out. From now on walletid answers it as never seen."
        : "Done: " + result.wallet + " is restored. walletid shows it again.", "done");
    } catch (err) {
      show("It did not work: " + (err && err.message ? err.message : String(err)), "error");
    } finally {
      $("sign").disabled = false;
    }
  }
  document.addEventListener("DOMContentLoaded", function () {
    $("connect").addEventListener("click", connect);
    $("sign").addEventListener("click", sign);
    if (!window.ethereum) show("No browser wallet found: this page needs one (an EIP-1193 wallet such as a browser extension) holding the address.", "error");
  });
})();
`;
