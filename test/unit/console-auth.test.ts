/**
 * The console's sign-in and the admin guard that accepts its cookie, over real HTTP (an app with the console
 * routes and one admin route; no database): the cookie's attributes, the bearer token unchanged, X-Console
 * required for cookie-authenticated changes, cross-site requests refused, expiry after 12 h on the clock,
 * sign-out ending the session and its event stream, and no token in any answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../../src/http/app.js';
import { requestHandler } from '../../src/http/handler.js';
import { createRouter } from '../../src/http/router.js';
import { ok } from '../../src/http/envelope.js';
import { createLogger } from '../../src/log.js';
import { CONSOLE_COOKIE, CONSOLE_SESSION_TTL_MS, ConsoleSessions, consoleApiRouter, consoleRouter, requireAdminOrConsole } from '../../src/console/index.js';
import { SESSION_ENDED } from '../../src/console/auth.js';
import type { Instance } from '../../src/store/instances.js';

const TOKEN = 'console-admin-token-0123456789abcdef';

async function world(lines: string[] = []) {
  let now = Date.UTC(2026, 0, 5, 10);
  const clock = { now: () => now };
  const sessions = new ConsoleSessions(clock);
  const admin = createRouter();
  admin.get('/admin/v1/thing', (ctx) => ok(ctx, { read: true }));
  admin.post('/admin/v1/thing', (ctx) => ok(ctx, { changed: true }));
  const inst = { id: 'in_1', name: 'one' } as unknown as Instance;
  const log = createLogger({ level: 'info', stream: { write: (line: string) => lines.push(line) } });
  const deps = { adminToken: TOKEN, sessions, pollMs: 50, log, instances: { list: async () => [inst], describe: async (i: Instance) => ({ id: i.id, name: i.name, status: 'connected' }) } };
  // as the composition root mounts them: the page and sign-in open, the rest behind the admin-or-console guard
  const guard = requireAdminOrConsole(TOKEN, sessions);
  const app = createApp({
    log,
    families: [
      { name: 'console', auth: 'none', guard: null, router: consoleRouter(deps) },
      { name: 'console-api', auth: 'admin', guard, router: consoleApiRouter(deps) },
      { name: 'admin', auth: 'admin', guard, router: admin },
    ],
  });
  const server = http.createServer(requestHandler(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const call = async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, text, cookie: res.headers.get('set-cookie') ?? '' };
  };
  const signIn = async () => {
    const r = await call('POST', '/console/session', { 'x-console': '1' }, { token: TOKEN });
    assert.equal(r.status, 200, r.text);
    return r.cookie.split(';')[0] ?? '';
  };
  return {
    sessions,
    call,
    signIn,
    url,
    advance: (ms: number) => void (now += ms),
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

test('sign-in: the right token sets an HttpOnly, SameSite=Strict, Path=/ cookie with an opaque id; refusals never echo the token', async (t) => {
  const w = await world();
  t.after(w.close);
  const noHeader = await w.call('POST', '/console/session', {}, { token: TOKEN });
  assert.equal(noHeader.status, 403);
  assert.equal(noHeader.cookie, '');
  const wrong = await w.call('POST', '/console/session', { 'x-console': '1' }, { token: 'guess-guess-guess-1234' });
  assert.equal(wrong.status, 401);
  assert.ok(!wrong.text.includes('guess-guess'));
  assert.equal((await w.call('POST', '/console/session', { 'x-console': '1' }, { token: 42 })).status, 400);
  const right = await w.call('POST', '/console/session', { 'x-console': '1' }, { token: TOKEN });
  assert.equal(right.status, 200);
  assert.match(right.cookie, new RegExp(`^${CONSOLE_COOKIE}=[A-Za-z0-9_-]{43};`));
  assert.match(right.cookie, /; *httponly/i);
  assert.match(right.cookie, /; *samesite=strict/i);
  assert.match(right.cookie, /; *path=\//i);
  assert.ok(!right.cookie.includes(TOKEN) && !right.text.includes(TOKEN));
  const cookie = right.cookie.split(';')[0] ?? '';
  assert.match((await w.call('GET', '/console/session', { cookie })).text, /"signedIn":true/);
  assert.match((await w.call('GET', '/console/session')).text, /"signedIn":false/);
});

test('refusals found from the outside: a cookie of no session says so; a sign-out with the token ends the cookie\'s session too; a wrong token is logged, never the token', async (t) => {
  const lines: string[] = [];
  const w = await world(lines);
  t.after(w.close);
  const cookie = await w.signIn();
  // an ended session (here: expired): the refusal says so, where it said "Authorization header missing"
  w.advance(CONSOLE_SESSION_TTL_MS);
  const ended = await w.call('GET', '/admin/v1/thing', { cookie });
  assert.equal(ended.status, 401);
  assert.deepEqual(JSON.parse(ended.text), { success: false, error: SESSION_ENDED, code: 'UNAUTHORIZED', data: {} });
  assert.match((await w.call('GET', '/admin/v1/thing')).text, /Authorization: Bearer/, 'no cookie: the admin guard answers as before');
  // DELETE /console/session with the admin token and the cookie: answered signedIn false, and so it is
  const again = await w.signIn();
  const out = await w.call('DELETE', '/console/session', { cookie: again, authorization: `Bearer ${TOKEN}` });
  assert.equal(out.status, 200, out.text);
  assert.match(out.text, /"signedIn":false/);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie: again })).status, 401, 'the session the cookie named ended');
  assert.equal(w.sessions.size, 0);
  // a sign-out with a cookie this node does not know (signed in on another node, or ended): 200 and the cookie
  // cleared, where the admin guard answered 401 before the cookie was cleared (found by the probe of the fix)
  const unknown = await w.call('DELETE', '/console/session', { cookie: again, 'x-console': '1' });
  assert.equal(unknown.status, 200, unknown.text);
  assert.match(unknown.cookie, new RegExp(`^${CONSOLE_COOKIE}=;`));
  assert.equal((await w.call('DELETE', '/console/session', { cookie: again })).status, 403, 'still not without X-Console');
  assert.equal((await w.call('DELETE', '/console/session', { cookie: again, 'x-console': '1', 'sec-fetch-site': 'cross-site' })).status, 403);
  // a wrong token at the sign-in: one warning, with no token in it
  const guess = 'guess-guess-guess-5678';
  assert.equal((await w.call('POST', '/console/session', { 'x-console': '1' }, { token: guess })).status, 401);
  const warned = lines.filter((l) => l.includes('console sign-in refused'));
  assert.equal(warned.length, 1, lines.join(''));
  assert.equal(JSON.parse(warned[0] as string).level, 40);
  assert.ok(!lines.join('').includes(guess) && !lines.join('').includes(TOKEN));
});

test('the cookie is Secure behind a proxy that ended TLS (X-Forwarded-Proto: https), and over plain HTTP it is not', async (t) => {
  const w = await world();
  t.after(w.close);
  const plain = await w.call('POST', '/console/session', { 'x-console': '1' }, { token: TOKEN });
  assert.equal(plain.status, 200, plain.text);
  assert.doesNotMatch(plain.cookie, /; *secure/i);
  const proxied = await w.call('POST', '/console/session', { 'x-console': '1', 'x-forwarded-proto': 'https' }, { token: TOKEN });
  assert.equal(proxied.status, 200, proxied.text);
  assert.match(proxied.cookie, /; *secure/i);
  assert.match(proxied.cookie, /; *httponly/i);
  // the first of a list, as proxies append theirs
  const chained = await w.call('POST', '/console/session', { 'x-console': '1', 'x-forwarded-proto': 'HTTPS, http' }, { token: TOKEN });
  assert.match(chained.cookie, /; *secure/i);
  // sign-out clears it with the same attributes
  const cookie = proxied.cookie.split(';')[0] ?? '';
  const out = await w.call('DELETE', '/console/session', { cookie, 'x-console': '1', 'x-forwarded-proto': 'https' });
  assert.equal(out.status, 200, out.text);
  assert.match(out.cookie, /; *secure/i);
});

test('the admin guard: bearer as before; the cookie reads freely, changes only with X-Console: 1 and not cross-site', async (t) => {
  const w = await world();
  t.after(w.close);
  const cookie = await w.signIn();
  assert.equal((await w.call('GET', '/admin/v1/thing', { authorization: `Bearer ${TOKEN}` })).status, 200);
  assert.equal((await w.call('POST', '/admin/v1/thing', { authorization: `Bearer ${TOKEN}` })).status, 200);
  assert.equal((await w.call('GET', '/admin/v1/thing', { authorization: 'Bearer not-the-token-000' })).status, 401);
  // a wrong bearer is refused even with a valid cookie: the header decides
  assert.equal((await w.call('GET', '/admin/v1/thing', { authorization: 'Bearer not-the-token-000', cookie })).status, 401);
  assert.equal((await w.call('GET', '/admin/v1/thing')).status, 401);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie })).status, 200);
  assert.equal((await w.call('POST', '/admin/v1/thing', { cookie })).status, 403);
  assert.equal((await w.call('POST', '/admin/v1/thing', { cookie, 'x-console': 'yes' })).status, 403);
  assert.equal((await w.call('POST', '/admin/v1/thing', { cookie, 'x-console': '1' })).status, 200);
  assert.equal((await w.call('POST', '/admin/v1/thing', { cookie, 'x-console': '1', 'sec-fetch-site': 'cross-site' })).status, 403);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie: `${CONSOLE_COOKIE}=${'A'.repeat(43)}` })).status, 401);
});

test('a session ends after 12 h on the clock, and at sign-out together with its event stream', async (t) => {
  const w = await world();
  t.after(w.close);
  const cookie = await w.signIn();
  w.advance(CONSOLE_SESSION_TTL_MS - 1);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie })).status, 200);
  w.advance(1);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie })).status, 401);
  assert.equal((await w.call('GET', '/console/events', { cookie })).status, 401);

  const again = await w.signIn();
  const res = await fetch(`${w.url}/console/events`, { headers: { cookie: again } });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = res.body?.getReader();
  assert.ok(reader);
  let text = '';
  const decoder = new TextDecoder();
  while (!text.includes('event: instances')) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream sends the instances');
    text += decoder.decode(value);
  }
  assert.match(text, /"name":"one"/);
  assert.equal((await w.call('DELETE', '/console/session', { cookie: again })).status, 403, 'sign-out needs X-Console too');
  const out = await w.call('DELETE', '/console/session', { cookie: again, 'x-console': '1' });
  assert.equal(out.status, 200);
  assert.match(out.cookie, new RegExp(`^${CONSOLE_COOKIE}=;`));
  // the open stream says so and ends
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  assert.match(text, /event: signed-out/);
  assert.equal((await w.call('GET', '/admin/v1/thing', { cookie: again })).status, 401);
  assert.equal(w.sessions.size, 0);
});

test('the event stream with the admin token (no session): ended when the gateway stops, without a sign-out event', async (t) => {
  const w = await world();
  t.after(w.close);
  const res = await fetch(`${w.url}/console/events`, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(res.status, 200);
  const reader = res.body?.getReader();
  assert.ok(reader);
  const decoder = new TextDecoder();
  let text = '';
  while (!text.includes('event: instances')) text += decoder.decode((await reader.read()).value);
  w.sessions.close();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  assert.doesNotMatch(text, /signed-out/);
  assert.equal((await w.call('GET', '/console/events', { authorization: 'Bearer not-the-token-000' })).status, 401);
});
