/**
 * The console's page and style, kept as strings so that the same files serve from src/ (tsx) and from the
 * compiled dist/ (tsc copies no .html or .css). The script is src/console/client/main.ts, bundled by the router.
 */
export const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Gateway console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/app.css">
<script defer src="/console/app.js"></script>
</head>
<body>
<header><h1>Gateway console</h1><button id="sign-out" type="button" hidden>Sign out</button></header>
<main>
<section id="sign-in" hidden>
  <h2>Sign in</h2>
  <form id="sign-in-form" autocomplete="off">
    <label>Admin token <input id="token" type="password" name="token" required autocomplete="off" spellcheck="false"></label>
    <button type="submit">Sign in</button>
  </form>
  <p class="error" id="sign-in-error" role="alert"></p>
</section>
<section id="app" hidden>
  <p class="error" id="app-error" role="alert"></p>
  <section id="new-key" class="notice" hidden>
    <p>API key of <strong id="new-key-name"></strong>. It is shown <em>once</em>: store it now.</p>
    <code id="new-key-value"></code>
    <button id="new-key-done" type="button">I have stored it</button>
  </section>
  <section>
    <h2>Instances <small id="live" class="muted">connecting…</small></h2>
    <p id="stale" class="stale-note" role="status" hidden></p>
    <table id="instances">
      <thead><tr><th>Name</th><th>Status</th><th>Phone</th><th>Driver</th><th>Queue</th><th>Actions</th></tr></thead>
      <tbody id="instances-body"></tbody>
    </table>
    <p id="empty" class="muted" hidden>No instances yet.</p>
  </section>
  <section id="link" hidden>
    <h2>Link <span id="link-name"></span></h2>
    <p id="link-status" class="muted"></p>
    <img id="qr" alt="QR code to scan with the phone" width="264" height="264" hidden>
    <form id="pair-form">
      <label>Or link by pairing code: phone number <input id="pair-phone" inputmode="numeric" placeholder="4915112345678"></label>
      <button type="submit">Get code</button>
    </form>
    <p id="pair-code" class="code"></p>
    <button id="link-close" type="button">Close</button>
  </section>
  <section id="settings" hidden>
    <h2>Settings of <span id="settings-name"></span></h2>
    <form id="settings-form">
      <textarea id="settings-json" rows="16" spellcheck="false" aria-label="Settings as JSON"></textarea>
      <p class="error" id="settings-error" role="alert"></p>
      <p class="muted" id="settings-saved"></p>
      <button type="submit">Save</button> <button id="settings-close" type="button">Close</button>
    </form>
  </section>
  <section id="queue" class="panel" hidden>
    <h2>Queue of <span id="queue-name"></span></h2>
    <p id="queue-counts" class="muted"></p>
    <button id="queue-replan" type="button" title="Re-plan every waiting job: after cancels, the rest move forward">Re-plan</button>
    <label>State <select id="queue-state"><option value="">all</option><option>queued</option><option>scheduled</option><option>sending</option><option>sent</option><option>failed</option><option>unknown</option><option>cancelled</option><option>expired</option></select></label>
    <p class="error" id="queue-error" role="alert"></p>
    <p class="muted" id="queue-note"></p>
    <table>
      <thead><tr><th>Job</th><th>State</th><th>Recipient</th><th>Scheduled</th><th>Outcome</th><th>Actions</th></tr></thead>
      <tbody id="queue-items"></tbody>
    </table>
    <p id="queue-empty" class="muted" hidden>No jobs.</p>
    <p id="queue-more" class="muted" hidden>Showing the oldest 200 jobs; filter by state to see others.</p>
    <button id="queue-close" type="button">Close</button>
  </section>
  <section id="webhook" class="panel" hidden>
    <h2>Webhook of <span id="webhook-name"></span></h2>
    <p id="webhook-state" class="muted"></p>
    <form id="webhook-form" autocomplete="off">
      <label>URL <input id="webhook-url" size="48" placeholder="https://hooks.example.com/gateway" spellcheck="false"></label>
      <label>Secret <input id="webhook-secret" type="password" placeholder="write-only: needed for every save" autocomplete="new-password" spellcheck="false"></label><br>
      <label>Events <input id="webhook-events" size="48" placeholder="default: message, ready, disconnected, instance_restarting, test; * for all" spellcheck="false"></label>
      <label><input id="webhook-private" type="checkbox"> allow private addresses</label>
      <label><input id="webhook-enabled" type="checkbox" checked> enabled</label>
      <p class="error" id="webhook-error" role="alert"></p>
      <p class="muted" id="webhook-saved"></p>
      <button type="submit">Save</button> <button id="webhook-test" type="button">Send test event</button> <button id="webhook-delete" type="button" class="danger">Remove webhook</button>
    </form>
    <h3>Deliveries</h3>
    <table id="deliveries">
      <thead><tr><th>Event id</th><th>Event</th><th>State</th><th>Attempts</th><th>Attempt log</th><th>Created</th><th></th></tr></thead>
      <tbody id="deliveries-body"></tbody>
    </table>
    <p id="deliveries-empty" class="muted" hidden>No deliveries.</p>
    <button id="webhook-close" type="button">Close</button>
  </section>
  <section id="diagrams" class="panel" hidden>
    <h2>State diagrams of <span id="diagrams-name"></span></h2>
    <p class="error" id="diagrams-error" role="alert"></p>
    <h3>Instance machine <small class="muted">live: <span id="diagram-instance-state"></span></small></h3>
    <div id="diagram-instance" class="statechart"></div>
    <h3>Job machine <small class="muted"><span id="diagram-job-state"></span></small></h3>
    <div id="diagram-job" class="statechart"></div>
    <button id="diagrams-close" type="button">Close</button>
  </section>
  <section>
    <h2>New instance</h2>
    <form id="create-form">
      <label>Name <input id="create-name" required pattern="[A-Za-z0-9\\-]{1,40}" title="1 to 40 ASCII letters, digits or dashes"></label>
      <label>Driver <select id="create-driver"><option value="sandbox">sandbox</option><option value="webjs">webjs</option></select></label>
      <button type="submit">Create</button>
    </form>
  </section>
</section>
</main>
<dialog id="confirm">
  <form method="dialog">
    <p id="confirm-text"></p>
    <menu><button value="cancel">Cancel</button> <button value="ok" id="confirm-ok">Confirm</button></menu>
  </form>
</dialog>
</body>
</html>
`;

export const CONSOLE_CSS = `
:root { font-family: system-ui, sans-serif; color: #1d2330; background: #f6f7f9; }
body { margin: 0; }
header { display: flex; align-items: center; justify-content: space-between; padding: .6rem 1.2rem; background: #1d2330; color: #fff; }
header h1 { font-size: 1.1rem; margin: 0; }
main { max-width: 72rem; margin: 0 auto; padding: 1rem 1.2rem; }
section > h2 { font-size: 1rem; margin: 1.2rem 0 .5rem; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; padding: .4rem .6rem; border-bottom: 1px solid #e1e4ea; vertical-align: middle; }
th { font-size: .8rem; text-transform: uppercase; color: #5a6273; }
td.actions button { margin-right: .3rem; }
button { font: inherit; padding: .25rem .7rem; border: 1px solid #b9c0cc; border-radius: 4px; background: #fff; cursor: pointer; }
button.danger { border-color: #c4302b; color: #c4302b; }
button:disabled { opacity: .45; cursor: default; }
header button { background: transparent; color: #fff; border-color: #fff; }
input, select { font: inherit; padding: .25rem .4rem; }
form label { margin-right: .8rem; }
.status { display: inline-block; padding: .1rem .5rem; border-radius: 1rem; font-size: .85rem; background: #e1e4ea; }
.status.connected { background: #d3f2dc; color: #17612f; }
.status.waiting_qr, .status.authenticated, .status.initializing { background: #fff1c7; color: #7a5800; }
.status.error, .status.disconnected { background: #fbd9d7; color: #8f1d17; }
.status.unknown, .status.waiting, .status.stale { background: #fff; color: #5a6273; border: 1px dashed #8a93a3; }
.stale-note { background: #fbd9d7; color: #8f1d17; border: 1px solid #e8a29d; padding: .4rem .8rem; border-radius: 4px; margin: 0 0 .5rem; }
table.stale td { color: #8a93a3; }
#live.stale { color: #8f1d17; font-weight: 600; }
.muted { color: #5a6273; font-weight: normal; }
.error { color: #8f1d17; }
.error:empty { display: none; }
.detail { display: block; font-size: .75rem; margin-top: .15rem; }
.note { color: #7a5800; }
.note:empty { display: none; }
.notice { background: #fff8e0; border: 1px solid #e8cf6b; padding: .6rem .9rem; border-radius: 4px; }
.notice code, .code { font-family: ui-monospace, monospace; font-size: 1.05rem; user-select: all; word-break: break-all; }
#link { background: #fff; border: 1px solid #e1e4ea; padding: .2rem 1rem 1rem; border-radius: 4px; margin-top: 1rem; }
#qr { display: block; margin: .5rem 0; image-rendering: pixelated; }
#settings { background: #fff; border: 1px solid #e1e4ea; padding: .2rem 1rem 1rem; border-radius: 4px; margin-top: 1rem; }
#settings-json { width: 100%; box-sizing: border-box; font-family: ui-monospace, monospace; font-size: .9rem; }
section > h3 { font-size: .9rem; margin: 1rem 0 .4rem; }
.panel { background: #fff; border: 1px solid #e1e4ea; padding: .2rem 1rem 1rem; border-radius: 4px; margin-top: 1rem; }
.panel table { margin: .5rem 0; font-size: .88rem; }
.mono { font-family: ui-monospace, monospace; font-size: .8rem; }
tr.selected { background: #eef4ff; }
.state { display: inline-block; padding: 0 .45rem; border-radius: 1rem; font-size: .8rem; background: #e1e4ea; }
.state.sent, .state.delivered { background: #d3f2dc; color: #17612f; }
.state.failed, .state.unknown, .state.expired { background: #fbd9d7; color: #8f1d17; }
.state.scheduled, .state.queued, .state.sending, .state.pending { background: #fff1c7; color: #7a5800; }
ol.attempts { margin: 0; padding-left: 1.2rem; font-size: .8rem; }
ol.attempts li.bad { color: #8f1d17; }
ol.attempts li.good { color: #17612f; }
#webhook-form label { display: inline-block; margin: .25rem .8rem .25rem 0; }
.statechart { overflow-x: auto; font-size: .78rem; }
.sc-state { border: 1px solid #b9c0cc; border-radius: 8px; padding: .25rem .45rem; margin: .3rem; background: #fff; min-width: 7rem; }
.sc-state.sc-final { border-width: 3px; border-style: double; }
.sc-state.sc-initial > .sc-head::before { content: "\\25CF\\2192 "; color: #5a6273; }
.sc-state.active { border-color: #1f8a45; background: #eefaf1; }
.sc-state.active > .sc-head { color: #17612f; }
.sc-state.active:not(:has(.sc-state.active)) { box-shadow: 0 0 0 3px #1f8a45; background: #d3f2dc; }
.sc-head { font-weight: 600; }
.sc-tags { color: #7a5800; font-weight: normal; }
.sc-trans { list-style: none; margin: .15rem 0; padding: 0; color: #38404f; }
.sc-trans li::before { content: "\\21B3 "; color: #8a93a3; }
.sc-children { display: flex; flex-wrap: wrap; align-items: flex-start; }
.sc-regions > .sc-state { border-style: dashed; flex: 1 1 18rem; }
dialog { border: 1px solid #b9c0cc; border-radius: 6px; }
menu { padding: 0; text-align: right; }
`;
