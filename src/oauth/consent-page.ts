// The consent page: server-rendered HTML with no scripts and nothing loaded from elsewhere.
// The person proves the account with one of its API keys (never stored, never echoed back),
// sees who asks and what it may do, and approves or declines.

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
}

const STYLE = `
  body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; background: #f4f5f7; color: #1c2024; margin: 0; }
  main { max-width: 34rem; margin: 3rem auto; background: #fff; border-radius: 12px; padding: 2rem 2.25rem; box-shadow: 0 2px 12px rgba(0,0,0,.08); }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
  .host { color: #555; margin: 0 0 1.25rem; word-break: break-all; }
  h2 { font-size: 1rem; margin: 1.25rem 0 .4rem; }
  ul { margin: 0; padding-left: 1.2rem; }
  li.no { color: #8a1f11; }
  .warn { background: #fff4d6; border: 1px solid #e6c35c; border-radius: 8px; padding: .6rem .8rem; margin-top: 1rem; }
  .error { background: #fde8e6; border: 1px solid #e59a90; border-radius: 8px; padding: .6rem .8rem; margin: 1rem 0; }
  label { display: block; font-weight: 600; margin-top: 1.25rem; }
  input[type=password] { width: 100%; box-sizing: border-box; font: inherit; padding: .55rem .7rem; border: 1px solid #b8bcc2; border-radius: 8px; margin-top: .35rem; }
  .buttons { display: flex; gap: .75rem; margin-top: 1.5rem; }
  button { font: inherit; font-weight: 600; padding: .6rem 1.4rem; border-radius: 8px; border: 1px solid #b8bcc2; background: #fff; cursor: pointer; }
  button[value=approve] { background: #1d5fd1; border-color: #1d5fd1; color: #fff; }
  .note { color: #555; font-size: .9rem; margin-top: 1.5rem; }
  .brand { font-weight: 700; color: #1d5fd1; letter-spacing: .02em; margin-bottom: 1rem; }
`;

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
<div class="brand">walletid</div>
${body}
</main>
</body>
</html>`;
}

export interface ConsentView {
  clientName: string;
  /** The hostname the client is known by: its metadata document's, else its redirect's. */
  clientHost: string;
  redirectUri: string;
  /** Every declared redirect is loopback: anyone could run such a client under this name. */
  loopbackOnly: boolean;
  consentId: string;
  csrf: string;
  action: string;
  error?: string;
}

export function renderConsentPage(view: ConsentView): string {
  const name = escapeHtml(view.clientName);
  return page(
    `Connect ${view.clientName} to walletid`,
    `<h1>${name} wants to use your walletid account</h1>
<p class="host">Client: <strong>${escapeHtml(view.clientHost)}</strong><br>Returns you to: ${escapeHtml(view.redirectUri)}</p>
${view.error ? `<p class="error" role="alert">${escapeHtml(view.error)}</p>` : ""}
<h2>It will be able to</h2>
<ul>
<li>resolve wallets and run reverse lookups, spending your match credits</li>
<li>submit and read lookup jobs</li>
<li>read your credit balance and index statistics</li>
</ul>
<h2>It will never be able to</h2>
<ul>
<li class="no">buy credits</li>
<li class="no">change your account or its keys</li>
<li class="no">see billing details or your email address</li>
</ul>
${view.loopbackOnly ? `<p class="warn">This client runs on a local computer (its callback is on localhost). Only continue if you started this connection yourself.</p>` : ""}
<form method="post" action="${escapeHtml(view.action)}">
<input type="hidden" name="consent" value="${escapeHtml(view.consentId)}">
<input type="hidden" name="csrf" value="${escapeHtml(view.csrf)}">
<label for="api_key">One of your API keys, to prove the account is yours</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" placeholder="wid_live_…">
<div class="buttons">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="decline">Decline</button>
</div>
</form>
<p class="note">You can disconnect it at any time (GET and DELETE /api/v1/connections with your API key).</p>`,
  );
}

/** An outcome shown on the page instead of sent to the client's callback. */
export function renderMessagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1>\n<p>${escapeHtml(message)}</p>`);
}
