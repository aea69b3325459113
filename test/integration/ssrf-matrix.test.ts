/**
 * The SSRF matrix, against a whole gateway over real HTTP (issue 13): every URL the gateway would fetch on
 * someone's behalf — `mediaUrl` of v2 and v1 send-media (at acceptance and again at dispatch) and webhook URLs
 * (admin PUT and delivery time) — is refused when it reaches, or could reach, anything but a public address.
 * The proof of "no connection" (canaries, every connection attempt observed) and the stand-in for a public
 * host are in ssrf-matrix-world.ts. What the acceptance probe refuses through the stand-in (redirects, hops,
 * sizes, status, reachability) is in ssrf-matrix-probe.test.ts.
 *
 * Dispatch keeps its own checks (DNS and answers may change after acceptance): shown with names rebound to
 * loopback after acceptance, and with the stand-in's `/late/` URLs, which answer the acceptance probe's HEAD
 * plainly and the dispatch GET with the refused thing.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { loopbackSpellings, privateTargets, refusedSchemes } from './ssrf-matrix-cases.js';
import { PHONE, STANDIN, startMatrixWorld, type MatrixWorld } from './ssrf-matrix-world.js';

let w: MatrixWorld;
before(async () => {
  w = await startMatrixWorld('ssrfmatrix');
});
after(async () => {
  await w?.stop();
});

const ACCEPTANCE_CASES = () => w.at([...loopbackSpellings, ...privateTargets, ...refusedSchemes]);

describe('at acceptance: refused with 400 (v2), the frozen v1 refusal, 400 on webhook PUT; no connection', () => {
  test('v2 POST /api/v2/send-media', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await w.g.api(w.apiKey, 'POST', '/api/v2/send-media', { phone: PHONE, mediaUrl: c.url });
      assert.equal(r.status, 400, `${c.label} (${c.url}): ${r.text}`);
      assert.equal(r.body.code, 'VALIDATION_FAILED', c.label);
      assert.equal(r.body.data?.field, 'mediaUrl', c.label);
      w.assertNoInternals(r.text, c);
    }
    w.assertSilence('v2 send-media');
  });

  test('v1 POST /api/send-media: v1 answers a refused mediaUrl as its frozen validation failure, nothing queued', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await w.g.api(w.apiKey, 'POST', '/api/send-media', { phone: PHONE, mediaUrl: c.url });
      assert.equal(r.status, 500, `${c.label} (${c.url}): ${r.text}`);
      assert.deepEqual(Object.keys(r.body), ['success', 'error'], c.label);
      assert.match(String(r.body.error), /mediaUrl/, c.label);
      w.assertNoInternals(r.text, c);
    }
    const items = await w.g.api(w.apiKey, 'GET', '/api/v2/queue/items');
    assert.equal(items.status, 200, items.text);
    assert.doesNotMatch(items.text, /wq_/, 'nothing was queued');
    w.assertSilence('v1 send-media');
  });

  test('admin PUT /admin/v1/instances/:id/webhook', async () => {
    for (const c of ACCEPTANCE_CASES()) {
      const r = await w.g.admin('PUT', `/admin/v1/instances/${w.instanceId}/webhook`, { url: c.url, secret: 'a-webhook-secret-of-32-characters' });
      assert.equal(r.status, 400, `${c.label} (${c.url}): ${r.text}`);
      assert.equal(r.body.code, 'VALIDATION_FAILED', c.label);
      assert.equal(r.body.data?.field, 'url', c.label);
      w.assertNoInternals(r.text, c);
      assert.ok(!r.text.includes('a-webhook-secret'), 'the secret is never echoed');
    }
    assert.equal((await w.g.admin('GET', `/admin/v1/instances/${w.instanceId}/webhook`)).status, 404, 'nothing was stored');
    w.assertSilence('webhook PUT');
  });
});

describe('at dispatch: the fetch itself refuses; the job fails MEDIA_DOWNLOAD_FAILED; no connection', () => {
  test('control: accepted after one HEAD, fetched with one GET; 3 redirect hops are followed', async () => {
    const from = w.standinRequests.length;
    assert.equal((await w.sendAndSettle(w.standinUrl('/ok.png'))).state, 'sent');
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /ok.png', 'GET /ok.png']);
    assert.equal((await w.sendAndSettle(w.standinUrl('/hop/3'))).state, 'sent');
    w.assertSilence('control');
  });

  test('a redirect (after acceptance) to any loopback spelling, private range, private-resolving name, or other scheme', async () => {
    for (const c of w.at([...loopbackSpellings, ...privateTargets, ...refusedSchemes])) {
      const job = await w.sendAndSettle(w.standinUrl(`/late/r?to=${encodeURIComponent(c.url)}`));
      assert.equal(job.state, 'failed', `${c.label} (${c.url}): ${JSON.stringify(job)}`);
      assert.equal(job.resultCode, 'MEDIA_DOWNLOAD_FAILED', c.label);
      assert.match(String(job.errorMessage), /^mediaUrl /, c.label);
      w.assertNoInternals(String(job.errorMessage), c);
    }
    w.assertSilence('redirects');
  });

  test('DNS rebinding: public at acceptance (probed there), loopback when fetched', async () => {
    w.dynamic.set('rebind.test', [{ address: STANDIN, family: 4 }]);
    const from = w.standinRequests.length;
    const r = await w.g.api(w.apiKey, 'POST', '/api/v2/send-media', { phone: PHONE, mediaUrl: `http://rebind.test:${w.standinPort}/ok.png` });
    assert.equal(r.status, 202, r.text);
    w.dynamic.set('rebind.test', [{ address: '127.0.0.1', family: 4 }]);
    const job = await w.settle(String(r.body.data?.jobId));
    assert.equal(job.state, 'failed', JSON.stringify(job));
    assert.match(String(job.errorMessage), /public address/);
    assert.ok(!String(job.errorMessage).includes('127.0.0.1'));
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /ok.png'], 'only the probe reached the stand-in');
    w.dynamic.delete('rebind.test');
    w.assertSilence('rebinding');
  });

  test('more than 3 hops (after acceptance): refused, the 5th URL never requested', async () => {
    const from = w.standinRequests.length;
    const job = await w.sendAndSettle(w.standinUrl('/late/hop/4'));
    assert.equal(job.state, 'failed');
    assert.match(String(job.errorMessage), /redirects more than 3 times/);
    assert.deepEqual(w.standinRequests.slice(from), ['HEAD /late/hop/4', 'GET /late/hop/4', 'GET /hop/3', 'GET /hop/2', 'GET /hop/1']);
  });

  test('sizes: Content-Length above 16 MiB, a body growing past 16 MiB, a body larger than its declared length', async () => {
    for (const [path, why] of [
      ['/late/declared-17mib', /exceeds 16777216 bytes \(Content-Length: 17825792\)/],
      ['/chunked-17mib', /exceeds 16777216 bytes/], // declares no length: the probe cannot know, dispatch counts
      ['/late/length-and-chunked', /could not be fetched/],
      ['/late/two-lengths', /could not be fetched/],
    ] as const) {
      const job = await w.sendAndSettle(w.standinUrl(path));
      assert.equal(job.state, 'failed', `${path}: ${JSON.stringify(job)}`);
      assert.equal(job.resultCode, 'MEDIA_DOWNLOAD_FAILED');
      assert.match(String(job.errorMessage), why, path);
    }
    w.assertSilence('sizes');
  });
});

describe('webhook delivery time: a URL that turned private is refused at connect, the canary silent', () => {
  interface Delivery {
    attemptLog: { error: string | null }[];
  }
  async function firstAttemptError(): Promise<string> {
    const sent = await w.g.admin('POST', `/admin/v1/instances/${w.instanceId}/webhook/test`, {});
    assert.equal(sent.status, 202, sent.text);
    for (let i = 0; i < 2_000; i++) {
      const list = await w.g.admin('GET', `/admin/v1/instances/${w.instanceId}/webhook/deliveries`);
      const items = ((list.body.data as { items?: Delivery[] } | undefined)?.items ?? []) as Delivery[];
      const error = items[0]?.attemptLog[0]?.error;
      if (error) return error;
      await new Promise((res) => setTimeout(res, 5));
    }
    throw new Error('no delivery attempt recorded');
  }

  test('a name that resolved public at PUT and loopback at delivery', async () => {
    w.dynamic.set('hook.test', [{ address: STANDIN, family: 4 }]);
    const put = await w.g.admin('PUT', `/admin/v1/instances/${w.instanceId}/webhook`, { url: `http://hook.test:${w.canaryPort}/hook`, secret: 'a-webhook-secret-of-32-characters' });
    assert.equal(put.status, 200, put.text);
    w.dynamic.set('hook.test', [{ address: '127.0.0.1', family: 4 }]);
    const error = await firstAttemptError();
    assert.match(error, /non-public address \(loopback\)/);
    assert.ok(!error.includes('127.0.0.1') && !error.includes('hook.test'), error);
    w.assertSilence('webhook rebinding');
  });

  test('a stored loopback literal (a row from before the checks) is refused before any connection', async () => {
    await w.g.db.pool.query('UPDATE webhooks SET url = $2 WHERE instance_id = $1', [w.instanceId, `http://[::ffff:127.0.0.1]:${w.canaryPort}/hook`]);
    const error = await firstAttemptError();
    assert.match(error, /must point to a public address/);
    w.assertSilence('stored literal');
  });
});
