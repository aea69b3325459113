/**
 * The SSRF matrix at acceptance, through the probe (SPEC.md "Media endpoints": `mediaUrl` validated when the
 * request is accepted; issue 13): a `mediaUrl` that redirects to a non-public target or another scheme, that
 * redirects more than 3 times, that declares more than 16 MiB, that answers an error or cannot be reached is
 * refused when the send is made — v2 `400 VALIDATION_FAILED` with `data.field` `mediaUrl` and the rule in the
 * message, v1 its frozen 500 `{success:false, error}` — and nothing is queued. No connection to a non-public
 * address is ever opened (canaries and every connection attempt, ssrf-matrix-world.ts).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loopbackSpellings, privateTargets, probeRefusals, refusedSchemes, type Case } from './ssrf-matrix-cases.js';
import { PHONE, startMatrixWorld, type MatrixWorld } from './ssrf-matrix-world.js';

let w: MatrixWorld;
before(async () => {
  w = await startMatrixWorld('ssrfprobe');
});
after(async () => {
  await w?.stop();
});

/** Every case of the matrix as a redirect target of the (public) stand-in. */
const REDIRECT_CASES = (): Case[] =>
  w.at([...loopbackSpellings, ...privateTargets, ...refusedSchemes]).map((c) => ({ ...c, label: `redirect to ${c.label}`, url: w.redirectTo(c.url) }));

/** What each redirect case must be refused for: the rule, in words. */
function expectedRule(c: Case): RegExp {
  if (c.url.includes('nowhere.invalid')) return /^mediaUrl could not be reached: the host does not resolve \(ENOTFOUND\)$/;
  if (/to=(file|ftp|gopher|data|javascript|ws)%3A/.test(c.url)) return /^mediaUrl redirects to a URL that is not http or https$/;
  // a Location header carries bytes, not text: the fullwidth dots arrive mangled, so no URL at all
  if (c.url.includes('%E3%80%82')) return /^mediaUrl redirects to an invalid URL$/;
  return /^mediaUrl redirects to a non-public address \(target is [a-z0-9 -]+\)$/;
}

async function v2Refusal(mediaUrl: string, what: string) {
  const r = await w.g.api(w.apiKey, 'POST', '/api/v2/send-media', { phone: PHONE, mediaUrl });
  assert.equal(r.status, 400, `${what}: ${r.text}`);
  assert.equal(r.body.code, 'VALIDATION_FAILED', what);
  assert.equal(r.body.data?.field, 'mediaUrl', what);
  return { message: String(r.body.error), data: r.body.data ?? {}, text: r.text };
}

async function v1Refusal(mediaUrl: string, what: string): Promise<string> {
  const r = await w.g.api(w.apiKey, 'POST', '/api/send-media', { phone: PHONE, mediaUrl });
  assert.equal(r.status, 500, `${what}: ${r.text}`);
  assert.deepEqual(Object.keys(r.body), ['success', 'error'], what);
  assert.equal(r.body.success, false, what);
  return String(r.body.error);
}

/** v2 and v1 refuse `path` of the stand-in with `rule`; the stand-in saw exactly `requests` for each. */
async function refusedBoth(path: string, rule: RegExp, requests: string[]) {
  const from = w.standinRequests.length;
  const v2 = await v2Refusal(w.standinUrl(path), path);
  assert.match(v2.message, rule, path);
  assert.deepEqual(w.standinRequests.slice(from), requests, `${path}: the probe's requests`);
  assert.match(await v1Refusal(w.standinUrl(path), path), rule, `${path} (v1)`);
  return v2;
}

describe('refused at acceptance: 400 (v2), the frozen 500 (v1), nothing queued, no connection', () => {
  test('a redirect to any loopback spelling, private range, private-resolving name, or other scheme', async () => {
    for (const c of REDIRECT_CASES()) {
      const v2 = await v2Refusal(c.url, c.label);
      assert.match(v2.message, expectedRule(c), `${c.label} (${c.url})`);
      w.assertNoInternals(v2.text, c);
      const v1 = await v1Refusal(c.url, c.label);
      assert.match(v1, expectedRule(c), `${c.label} (v1)`);
      w.assertNoInternals(v1, c);
    }
    w.assertSilence('redirects at acceptance');
  });

  for (const c of probeRefusals) {
    test(c.label, async () => {
      const v2 = await refusedBoth(c.path, c.rule, c.requests);
      for (const [k, v] of Object.entries(c.data ?? {})) assert.deepEqual(v2.data[k], v, `${c.path}: data.${k}`);
    });
  }

  test('a target that refuses the connection: could not be reached', async () => {
    const url = `http://media.test:${w.closedPort}/a.png`;
    const v2 = await v2Refusal(url, 'closed port');
    assert.equal(v2.message, 'mediaUrl could not be reached: the connection was refused (ECONNREFUSED)');
    assert.equal(v2.data.reason, 'unreachable');
    assert.equal(await v1Refusal(url, 'closed port'), v2.message);
  });

  test('nothing was queued by any refusal, and nothing connected anywhere else', async () => {
    const items = await w.g.api(w.apiKey, 'GET', '/api/v2/queue/items');
    assert.equal(items.status, 200, items.text);
    assert.doesNotMatch(items.text, /wq_/, 'nothing was queued');
    w.assertSilence('acceptance probe');
  });
});

describe('accepted after the probe', () => {
  test('a public URL with a small Content-Length: accepted after one HEAD, fetched once at dispatch', async () => {
    const from = w.standinRequests.length;
    const job = await w.sendAndSettle(w.standinUrl('/ok.png'));
    assert.equal(job.state, 'sent', JSON.stringify(job));
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /ok.png', 'GET /ok.png']);
  });

  test('HEAD answered 405: the probe asks with a GET (its body unread), then dispatch fetches', async () => {
    const from = w.standinRequests.length;
    const job = await w.sendAndSettle(w.standinUrl('/no-head.png'));
    assert.equal(job.state, 'sent', JSON.stringify(job));
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /no-head.png', 'GET /no-head.png', 'GET /no-head.png']);
  });

  test('v1 is accepted the same way', async () => {
    const from = w.standinRequests.length;
    const r = await w.g.api(w.apiKey, 'POST', '/api/send-media', { phone: PHONE, mediaUrl: w.standinUrl('/ok.png') });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.success, true, r.text);
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /ok.png', 'GET /ok.png']);
    w.assertSilence('accepted');
  });
});
