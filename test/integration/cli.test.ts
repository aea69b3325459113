/**
 * The CLI as people use it (issue 17 item 4): `mgw` as a child process against a real gateway. Usage and
 * `--help` for every verb, usage errors (exit 2), the URL named when the gateway cannot be reached, tables by
 * default and `--json` for scripts, confirmation before delete, `webhook show|set|delete` with
 * `--allow-private`, `deliveries --state failed` and `redeliver`.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { startStubServer, type StubServer } from '../helpers/stub-http.js';

const run = promisify(execFile);
const MGW = fileURLToPath(new URL('../../bin/mgw.js', import.meta.url));
const SECRET = 'cli-test-webhook-secret-0123456789';

let t: TestGateway;
let hook: StubServer;
/** what the webhook receiver answers (500 until the redeliver case fixes it) */
let hookStatus = 500;

before(async () => {
  t = await startTestGateway({ label: 'cli' });
  hook = await startStubServer(() => ({ status: hookStatus, body: hookStatus >= 300 ? { error: 'down' } : {} }));
});
after(async () => {
  await t.stop();
  await hook.close();
});

interface Run { stdout: string; stderr: string; code: number }

async function mgw(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const full = { ...process.env, MGW_URL: t.url, ADMIN_TOKEN: t.adminToken, ...env };
  try {
    const { stdout, stderr } = await run(process.execPath, [MGW, ...args], { env: full, timeout: 30_000 });
    return { stdout, stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : -1 };
  }
}

/** `f` over `list`, four at a time: twenty node processes at once on a small, shared machine can outlast mgw()'s timeout. */
async function fewAtATime<T, R>(list: readonly T[], f: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = [];
  for (let i = 0; i < list.length; i += 4) results.push(...(await Promise.all(list.slice(i, i + 4).map(f))));
  return results;
}

const VERBS = ['start', 'sandbox', 'instances', 'create', 'get', 'settings', 'rotate-key', 'restart', 'replan', 'logout', 'qr', 'pair', 'delete',
  'webhook show', 'webhook set', 'webhook delete', 'webhook-test', 'deliveries', 'redeliver', 'nodes', 'health'];

test('mgw --help lists every verb and the environment; every verb honours --help (none runs)', async () => {
  const help = await mgw(['--help']);
  assert.equal(help.code, 0);
  for (const word of ['MGW_URL', 'ADMIN_TOKEN', 'DATA_DIR', ...VERBS]) assert.ok(help.stdout.includes(word), `--help names ${word}`);
  const results = await fewAtATime(VERBS, (v) => mgw([...v.split(' '), '--help'], { MGW_URL: 'http://127.0.0.1:9' }));
  results.forEach((r, i) => {
    assert.equal(r.code, 0, `${VERBS[i]} --help: ${r.stderr}`);
    assert.match(r.stdout, new RegExp(`^usage: mgw ${VERBS[i]}`), `${VERBS[i]} --help prints its usage`);
    assert.match(r.stdout, /MGW_URL/);
  });
  assert.match(results[1]?.stdout ?? '', /--port N/, 'sandbox --help prints its options rather than starting a sandbox');
});

test('usage errors: exit 2 and one line naming what is wrong', async () => {
  const cases: [string[], RegExp][] = [
    [['get'], /^mgw get: missing <id> \(usage: mgw get <id>\)$/],
    [['pair', 'abc'], /^mgw pair: missing <phone>/],
    [['settings'], /missing <id> and <json>/],
    [['redeliver', 'abc'], /^mgw redeliver: missing <eventId>/],
    [['webhook', 'set', 'abc'], /missing <url> and <secret>/],
    [['webhook'], /missing a subcommand: show, set or delete/],
    [['sandbox', '--port', 'abc'], /^mgw sandbox: --port must be an integer from 0 to 65535, not 'abc'$/],
    [['sandbox', '--port'], /--port needs a value/],
    [['instances', '--bogus'], /unknown option --bogus/],
    [['get', 'a', 'b'], /unexpected argument 'b'/],
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['settings', 'abc', '{nope'], /^mgw settings: the settings JSON is not valid JSON \(usage: mgw settings <id> <json>\)$/],
    [['create', 'x', '--settings', 'nope'], /^mgw create: --settings is not valid JSON \(usage: mgw create <name>/],
    [['sandbox', '--host', 'bad_host'], /^mgw sandbox: --host must be a host name or an IP address/],
    [['sandbox', '--host', ' 127.0.0.1'], /^mgw sandbox: --host must be/],
    [['sandbox', '--state', ' ./x.json'], /^mgw sandbox: --state must be a file path, without blanks around it$/],
    [[], /^mgw: missing a command \(mgw --help lists them\)$/],
  ];
  const results = await fewAtATime(cases, ([args]) => mgw(args));
  results.forEach((r, i) => {
    const [args, re] = cases[i]!;
    assert.equal(r.code, 2, `mgw ${args.join(' ')}: exit 2 (${r.stderr})`);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr.trim(), re);
    assert.equal(r.stdout, '');
  });
});

test('mgw sandbox: a start that fails names the option (a port in use, a state path that cannot be made, a host that does not resolve)', async () => {
  // found from the outside: bare node errors (listen EADDRINUSE, EEXIST: mkdir, getaddrinfo ENOTFOUND)
  const busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const taken = (busy.address() as { port: number }).port;
  const dir = await mkdtemp(path.join(tmpdir(), 'mgw-cli-sandbox-'));
  try {
    await writeFile(path.join(dir, 'afile'), '');
    await writeFile(path.join(dir, 'garbage.json'), 'garbage{"not":"state"');
    await mkdir(path.join(dir, 'adir.json'));
    const cases: [string[], RegExp][] = [
      [['sandbox', '--port', String(taken)], new RegExp(`^mgw: --port ${taken} on --host 127\\.0\\.0\\.1 is in use`)],
      [['sandbox', '--port', '0', '--state', path.join(dir, 'afile', 'x.json')], /^mgw: --state .*afile.x\.json cannot be used: /],
      // a state file that is a directory, or not JSON: named by the option and the path, never the file's text
      [['sandbox', '--port', '0', '--state', path.join(dir, 'adir.json')], /^mgw: --state \S*adir\.json cannot be used: sandbox state file \S*adir\.json cannot be read \(EISDIR\)$/],
      [['sandbox', '--port', '0', '--state', path.join(dir, 'garbage.json')], /^mgw: --state \S*garbage\.json cannot be used: sandbox state file \S*garbage\.json is not JSON: not a state file the sandbox wrote$/],
      [['sandbox', '--port', '0', '--host', 'nosuch.invalid'], /^mgw: --host nosuch\.invalid does not resolve to an address/],
    ];
    const results = await fewAtATime(cases, ([args]) => mgw(args));
    results.forEach((r, i) => {
      assert.equal(r.code, 1, `${cases[i]?.[0].join(' ')}: ${r.stderr}`);
      assert.match(r.stderr.trim(), cases[i]![1]);
    });
  } finally {
    busy.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('the address from MGW_URL or PORT: a bad one is a usage error naming the variable, never echoing a password', async () => {
  // found from the outside: a password in MGW_URL was printed back ("cannot reach the gateway … (Request cannot
  // be constructed from a URL that includes credentials: http://ops:…@…)"), and PORT=abc said only "Invalid URL"
  const cases: [Record<string, string>, RegExp][] = [
    [{ MGW_URL: 'http://ops:hunter2secret@127.0.0.1:9' }, /^mgw: MGW_URL must not carry a user or password/],
    [{ MGW_URL: 'not a url' }, /^mgw: MGW_URL is not a URL/],
    [{ MGW_URL: 'ftp://127.0.0.1:9' }, /^mgw: MGW_URL must be an http:\/\/ or https:\/\/ address$/],
    [{ MGW_URL: '', PORT: 'abc' }, /^mgw: PORT must be an integer from 0 to 65535 \(or set MGW_URL to the gateway's address\)$/],
  ];
  const results = await fewAtATime(cases, ([env]) => mgw(['health'], env));
  results.forEach((r, i) => {
    assert.equal(r.code, 2, `${JSON.stringify(cases[i]?.[0])}: ${r.stderr}`);
    assert.match(r.stderr.trim(), cases[i]![1]);
    assert.ok(!r.stderr.includes('hunter2secret'), 'never the password');
  });
});

test("the gateway's variables mgw reads are checked as the gateway checks them: a bad one is a usage error naming it, never its value", async () => {
  // found from the outside: mgw built its address from PORT as written, so PORT="80 " and PORT=80/x went to
  // port 80 (the gateway refuses both), PORT=x@127.0.0.1:9 was blamed on MGW_URL, and an ADMIN_TOKEN with a line
  // break was printed back whole in fetch's error
  const port = (reason: string) => new RegExp(`^mgw: PORT must be an integer from 0 to 65535${reason} \\(or set MGW_URL to the gateway's address\\)$`);
  const token = /^mgw: ADMIN_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 \. _ ~ \+ \/ = - \(what a bearer token may hold\)$/;
  const cases: [Record<string, string>, RegExp][] = [
    ...['70000', '-1', '80/x', '3000#x', '3000?a', '0x50', '1e3', '80.0', 'x@127.0.0.1:9'].map((p): [Record<string, string>, RegExp] => [{ MGW_URL: '', PORT: p }, port('')]),
    ...[' 80', '80 ', '3000\t'].map((p): [Record<string, string>, RegExp] => [{ MGW_URL: '', PORT: p }, port(', without blanks around it')]),
    [{ MGW_URL: '', PORT: '0' }, /^mgw: PORT is 0, a port the gateway chooses at its start: set MGW_URL to the address it printed$/],
    [{ ADMIN_TOKEN: 'hunter2-secret-token\nsecond-line' }, token],
    [{ ADMIN_TOKEN: 'hunter2 secret token' }, token],
    [{ ADMIN_TOKEN: 'hunter2' }, token],
    [{ ADMIN_TOKEN: '', DATA_DIR: ' /tmp/mgw' }, /^mgw: DATA_DIR must be a directory path, without blanks around it$/],
    [{ MGW_URL: ` ${t.url}` }, /^mgw: MGW_URL must be an http:\/\/ or https:\/\/ address, without blanks around it$/],
  ];
  const results = await fewAtATime(cases, ([env]) => mgw(['instances'], env));
  results.forEach((r, i) => {
    const [env, re] = cases[i]!;
    assert.equal(r.code, 2, `${JSON.stringify(env)}: exit 2 (${r.stderr})`);
    assert.equal(r.stderr.trimEnd().split('\n').length, 1, `one line: ${r.stderr}`);
    assert.match(r.stderr.trim(), re, JSON.stringify(env));
    assert.equal(r.stdout, '');
    assert.ok(!r.stderr.includes('hunter2') && !r.stderr.includes('second-line'), `never the token: ${r.stderr}`);
  });
  // read as the gateway reads it: a valid PORT is the gateway's port; PORT is not read when MGW_URL is set
  const gatewayPort = new URL(t.url).port;
  const read: Record<string, string>[] = [{ MGW_URL: '', PORT: gatewayPort }, { MGW_URL: '', PORT: `00${gatewayPort}` }, { PORT: 'abc' }];
  for (const env of read) {
    const r = await mgw(['health'], env);
    assert.equal(r.code, 0, `${JSON.stringify(env)}: ${r.stderr}`);
  }
});

test('the address: HOST and PORT as the gateway listens in the same environment, and the routes below a path of MGW_URL', async () => {
  // before, mgw went to 127.0.0.1 whatever HOST said, and resolved its routes against MGW_URL's origin, dropping
  // the path of a gateway behind a proxy under a prefix
  const onOther = await startStubServer(() => ({ status: 200, body: { success: true, data: { items: [] } } }), '127.0.0.2');
  const onLoopback = await startStubServer(() => ({ status: 200, body: { success: true, data: { items: [] } } }));
  try {
    const r1 = await mgw(['health'], { MGW_URL: '', HOST: '127.0.0.2', PORT: new URL(onOther.url).port });
    assert.equal(r1.code, 0, r1.stderr);
    assert.deepEqual(onOther.requests.map((r) => r.url), ['/health']);
    // a gateway listening on every interface is reached on loopback
    const r2 = await mgw(['health'], { MGW_URL: '', HOST: '0.0.0.0', PORT: new URL(onLoopback.url).port });
    assert.equal(r2.code, 0, r2.stderr);
    const r3 = await mgw(['instances', '--json'], { MGW_URL: `${onLoopback.url}/mgw/` });
    assert.equal(r3.code, 0, r3.stderr);
    const r4 = await mgw(['health'], { MGW_URL: `${onLoopback.url}/ops/mgw` });
    assert.equal(r4.code, 0, r4.stderr);
    assert.deepEqual(onLoopback.requests.map((r) => r.url), ['/health', '/mgw/admin/v1/instances', '/ops/mgw/health']);
    // HOST is checked as the gateway checks it, and not read when MGW_URL is set
    const r5 = await mgw(['health'], { MGW_URL: '', HOST: ' 127.0.0.1', PORT: new URL(onLoopback.url).port });
    assert.equal(r5.code, 2, r5.stderr);
    assert.match(r5.stderr.trim(), /^mgw: HOST .*\(or set MGW_URL to the gateway's address\)$/);
    const r6 = await mgw(['health'], { HOST: ' x' });
    assert.equal(r6.code, 0, r6.stderr);
    // a HOST that would make the URL another one (a path, a query, a fragment, a user) is refused, not followed:
    // found from the outside, HOST='127.0.0.1/evil?' sent the admin token to port 80 under /evil
    const bad = ['127.0.0.1/evil?', 'a/b', 'x#y', 'x?y', 'a@b', 'a@127.0.0.1', 'fe80::1%eth0', 'a:80', '[::1]/x', 'my host'];
    const refused = await fewAtATime(bad, (h) => mgw(['instances'], { MGW_URL: '', HOST: h, PORT: new URL(onLoopback.url).port }));
    refused.forEach((r, i) => {
      assert.equal(r.code, 2, `${bad[i]}: ${r.stderr}`);
      assert.match(r.stderr.trim(), /^mgw: HOST must be a host name or an IP address/, String(bad[i]));
      assert.ok(!r.stderr.includes(String(bad[i])), 'never the value');
    });
    assert.equal(onLoopback.requests.length, 3, 'none of them reached a server');
  } finally {
    await onOther.close();
    await onLoopback.close();
  }
});

test('the admin token from $DATA_DIR/admin-token: used when ADMIN_TOKEN is unset; one a bearer token cannot hold is refused without its text', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'mgw-cli-'));
  try {
    await writeFile(path.join(dir, 'admin-token'), `${t.adminToken}\n`);
    const ok = await mgw(['instances', '--json'], { ADMIN_TOKEN: '', DATA_DIR: dir });
    assert.equal(ok.code, 0, ok.stderr);
    // written by hand with a line break inside: it was sent as it was, and fetch's error printed it back
    await writeFile(path.join(dir, 'admin-token'), 'hunter2-secret-token\nsecond-line\n');
    const bad = await mgw(['instances'], { ADMIN_TOKEN: '', DATA_DIR: dir });
    assert.equal(bad.code, 1, bad.stderr);
    assert.equal(bad.stderr.trim(), `mgw: the admin token in ${path.join(dir, 'admin-token')} must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)`);
    assert.equal(bad.stdout, '');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('mgw replan <id>: the operator re-plan of an instance, its envelope with --json', async () => {
  const { instance } = await t.createInstance('cli-replan');
  const r = await mgw(['replan', instance.id, '--json']);
  assert.equal(r.code, 0, r.stderr);
  const body = JSON.parse(r.stdout) as { success: boolean; data: { replanned: boolean; affected: number } };
  assert.deepEqual([body.success, body.data.replanned, body.data.affected], [true, true, 0]);
  const unknown = await mgw(['replan', '00000000-0000-4000-8000-000000000000']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stdout, /INSTANCE_NOT_FOUND/);
});

test('a gateway that cannot be reached is named by its URL', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
  const r = await mgw(['instances'], { MGW_URL: `http://127.0.0.1:${port}` });
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`cannot reach the gateway at http://127\\.0\\.0\\.1:${port} \\(ECONNREFUSED\\)`));
  assert.ok(!r.stderr.includes(t.adminToken), 'never the token');
  // a gateway behind a proxy under a prefix: the message names the whole address tried, its path too (it named
  // the origin alone, so an operator could not tell a wrong prefix from a gateway that is down); a query or a
  // fragment of MGW_URL, which mgw does not send, is not named
  const prefixed = await fewAtATime(
    [[['instances'], `/ops/mgw`], [['health'], `/ops/mgw/`], [['nodes'], `/ops/mgw?token=${t.adminToken}#frag`]] as const,
    ([args, suffix]) => mgw([...args], { MGW_URL: `http://127.0.0.1:${port}${suffix}` }),
  );
  for (const p of prefixed) {
    assert.equal(p.code, 1, p.stderr);
    assert.match(p.stderr, new RegExp(`cannot reach the gateway at http://127\\.0\\.0\\.1:${port}/ops/mgw \\(ECONNREFUSED\\)`), p.stderr);
    assert.ok(!p.stderr.includes(t.adminToken), `never the token: ${p.stderr}`);
    assert.ok(!p.stderr.includes('frag') && !p.stderr.includes('token='), `no query or fragment: ${p.stderr}`);
  }
  // a proxy whose prefix is its secret (a path token, as a webhook receiver's): the segment is shown masked
  const secretPrefix = 'Zx9kQ2mN7vB4tR8wL3yH';
  const masked = await mgw(['instances'], { MGW_URL: `http://127.0.0.1:${port}/gw/${secretPrefix}/` });
  assert.equal(masked.code, 1, masked.stderr);
  assert.match(masked.stderr, new RegExp(`cannot reach the gateway at http://127\\.0\\.0\\.1:${port}/gw/\\*\\*\\* \\(ECONNREFUSED\\)`), masked.stderr);
  assert.ok(!masked.stderr.includes(secretPrefix), `never the path token: ${masked.stderr}`);
});

test('tables by default, --json for scripts; delete asks first; webhook show|set|delete; deliveries --state failed', async () => {
  const { instance } = await t.createInstance('cli-table', { link: false });
  const id = instance.id;

  const tableOut = await mgw(['instances']);
  assert.equal(tableOut.code, 0, tableOut.stderr);
  const [header, ...rows] = tableOut.stdout.trimEnd().split('\n');
  assert.match(header ?? '', /^ID\s+NAME\s+DRIVER\s+STATUS\s+PHONE\s+NODE$/);
  assert.ok(rows.some((r) => r.startsWith(id) && r.includes('cli-table') && r.includes('sandbox')), tableOut.stdout);
  const json = await mgw(['instances', '--json']);
  const parsed = JSON.parse(json.stdout) as { success: boolean; data: { items: { id: string }[] } };
  assert.equal(parsed.success, true);
  assert.ok(parsed.data.items.some((i) => i.id === id));

  const nodes = await mgw(['nodes']);
  assert.equal(nodes.code, 0, nodes.stderr);
  assert.match(nodes.stdout, /^ID\s+URL\s+CAPACITY\s+INSTANCES\s+SELF\s+HEARTBEAT\s+CLOCK\n/);
  // this node's clock against the database's, measured at its rounds: a few ms either way on one machine
  assert.match(nodes.stdout, /\syes\s+\S+\s+[+-]?\d+ ms\n/);

  // webhook: a private address is refused unless --allow-private; the secret is never shown
  const refused = await mgw(['webhook', 'set', id, `${hook.url}/hook`, SECRET, 'test']);
  assert.equal(refused.code, 1);
  assert.match(refused.stdout, /"success": false/);
  // a token in the URL (a user name alone, a query value) is shown masked, and deliveries still carry it
  const withToken = `${hook.url.replace('//', '//cli-user-token@')}/hook?token=cli-query-token`;
  const set = await mgw(['webhook', 'set', id, withToken, SECRET, 'test', '--allow-private']);
  assert.equal(set.code, 0, set.stdout + set.stderr);
  assert.match(set.stdout, /allowPrivate: true/);
  const shown = await mgw(['webhook', 'show', id]);
  assert.equal(shown.code, 0);
  assert.match(shown.stdout, new RegExp(`^url: ${hook.url.replace('//', '//***@').replace(/[.*]/g, '\\$&')}/hook\\?token=\\*\\*\\*$`, 'm'));
  for (const out of [set.stdout, shown.stdout, (await mgw(['webhook', 'show', id, '--json'])).stdout]) {
    assert.ok(!out.includes(SECRET), 'the secret is never shown');
    assert.ok(!out.includes('cli-user-token') && !out.includes('cli-query-token'), `the URL's tokens are never shown: ${out}`);
  }
  assert.equal(JSON.parse((await mgw(['webhook', 'show', id, '--json'])).stdout).data.events[0], 'test');

  // a delivery that fails (the receiver answers 500; removing the webhook fails what is pending)
  const sent = await mgw(['webhook-test', id, '--json']);
  assert.equal(sent.code, 0, sent.stdout);
  const eventId = (JSON.parse(sent.stdout) as { data: { eventId: string } }).data.eventId;
  await waitFor(() => hook.requests.length > 0, 'a first delivery attempt', 6_000);
  assert.equal(hook.requests[0]?.url, '/hook?token=cli-query-token', 'delivered to the URL as set');
  assert.equal(hook.requests[0]?.headers.authorization, `Basic ${Buffer.from('cli-user-token:').toString('base64')}`);
  const keep = await mgw(['webhook', 'delete', id]);
  assert.equal(keep.code, 2, 'no confirmation without a terminal');
  assert.match(keep.stderr, /stdin is not a terminal; pass --yes/);
  assert.equal((await mgw(['webhook', 'show', id])).code, 0, 'the webhook is still there');
  const removed = await mgw(['webhook', 'delete', id, '--yes', '--json']);
  assert.equal(JSON.parse(removed.stdout).data.deleted, true);

  const failed = await waitFor(async () => {
    const r = await mgw(['deliveries', id, '--state', 'failed']);
    return r.stdout.includes(eventId) ? r : null;
  }, 'the delivery failed', 200);
  const [dh, ...drows] = failed.stdout.trimEnd().split('\n');
  assert.match(dh ?? '', /^EVENT ID\s+EVENT\s+STATE\s+ATTEMPTS\s+LAST STATUS\s+CREATED\s+LAST ERROR$/);
  assert.equal(drows.length, 1);
  assert.match(drows[0] ?? '', new RegExp(`^${eventId}\\s+test\\s+failed\\s+\\d/\\d`));
  assert.equal((await mgw(['deliveries', id, '--state', 'delivered'])).stdout.trimEnd().split('\n').length, 1, 'header only');
  const badState = await mgw(['deliveries', id, '--state', 'nope']);
  assert.equal(badState.code, 1);
  assert.match(badState.stdout, /VALIDATION_FAILED/);

  // redeliver: refused while the instance has no webhook; with the webhook back and the receiver fixed, sent again
  const noHook = await mgw(['redeliver', id, eventId]);
  assert.equal(noHook.code, 1);
  assert.match(noHook.stdout, /CONFLICT/);
  assert.equal((await mgw(['webhook', 'set', id, `${hook.url}/hook`, SECRET, 'test', '--allow-private'])).code, 0);
  hookStatus = 204;
  const redelivered = await mgw(['redeliver', id, eventId, '--json']);
  assert.equal(redelivered.code, 0, redelivered.stdout + redelivered.stderr);
  assert.deepEqual(JSON.parse(redelivered.stdout).data, { eventId, state: 'pending' });
  await waitFor(async () => (await mgw(['deliveries', id, '--state', 'delivered'])).stdout.includes(eventId), 'the redelivery delivered', 200);
  assert.equal(hook.requests.at(-1)?.headers['x-event-id'], eventId, 'the receiver got the same event id again');
  assert.equal((await mgw(['redeliver', id, 'ev_000000000000000000000000'])).code, 1, 'an unknown event: 404');

  // delete: refused without a terminal unless --yes
  const kept = await mgw(['delete', id]);
  assert.equal(kept.code, 2);
  assert.match(kept.stderr, /^mgw delete: refusing to delete instance .* pass --yes$/m);
  assert.equal((await t.admin('GET', `/admin/v1/instances/${id}`)).status, 200, 'still there');
  const gone = await mgw(['delete', id, '--yes']);
  assert.equal(gone.code, 0, gone.stdout + gone.stderr);
  assert.equal((await t.admin('GET', `/admin/v1/instances/${id}`)).status, 404);
});

/** mgw with `input` on its stdin. */
function mgwWithInput(args: string[], input: string | Buffer): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MGW, ...args], { env: { ...process.env, MGW_URL: t.url, ADMIN_TOKEN: t.adminToken }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('exit', (code) => resolve({ stdout, stderr, code: code ?? -1 }));
    child.stdin.end(input);
  });
}

test('webhook set with the secret given as -: read from stdin, never in the process list; the deliveries are signed with it', async () => {
  const { instance } = await t.createInstance('cli-stdin-secret', { link: false });
  const secret = 'cli-stdin-secret-9876543210abcdef';
  const set = await mgwWithInput(['webhook', 'set', instance.id, `${hook.url}/stdin`, '-', 'test', '--allow-private'], `${secret}\n`);
  assert.equal(set.code, 0, set.stdout + set.stderr);
  assert.ok(!set.stdout.includes(secret));
  const from = hook.requests.length;
  assert.equal((await mgw(['webhook-test', instance.id])).code, 0);
  const delivery = await waitFor(() => hook.requests.slice(from).find((r) => r.url === '/stdin') ?? null, 'the test event delivered', 6_000);
  assert.equal(delivery.headers['x-webhook-signature'], `sha256=${createHmac('sha256', secret).update(delivery.body).digest('hex')}`);
  const none = await mgwWithInput(['webhook', 'set', instance.id, `${hook.url}/stdin`, '-', '--allow-private'], '');
  assert.equal(none.code, 2, none.stderr);
  assert.match(none.stderr, /^mgw webhook set: the secret given as - is read from stdin, which gave none/);
});

test('an answer that is not the gateway\'s (a proxy\'s HTML page, another server\'s JSON, a body cut short): exit 1 on stderr, naming it', async () => {
  const server = createHttpServer((req, res) => {
    if (req.url?.includes('cut')) {
      // a 200 whose body ends before its length: the connection closed under it
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"success":true,"da');
      setTimeout(() => res.destroy(), 20);
    } else if (req.url?.includes('other')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"hello":1}');
    } else {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<html>sign in to the proxy</html>');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const cases: [string[], string, RegExp][] = [
      [['create', 'x'], '', /the answer to POST \/admin\/v1\/instances from http:\/\/127\.0\.0\.1:\d+ is not the gateway's \(HTTP 200, text\/html, not JSON\)/],
      [['instances'], '', /the answer to GET \/admin\/v1\/instances from \S+ is not the gateway's \(HTTP 200, text\/html, not JSON\)/],
      [['health'], '', /the answer to GET \/health from \S+ is not the gateway's \(HTTP 200, text\/html, not JSON\)/],
      [['instances'], '/other', /is not the gateway's \(HTTP 200, application\/json, no envelope\)/],
      [['create', 'x'], '/cut', /the answer to POST \/admin\/v1\/instances from \S+ was cut short \(HTTP 200, [^)]*\): what the gateway did is not known/],
    ];
    for (const [args, prefix, message] of cases) {
      const r = await mgw(args, { MGW_URL: `http://127.0.0.1:${port}${prefix}` });
      assert.equal(r.code, 1, `${args.join(' ')} ${prefix}: ${r.stdout}${r.stderr}`);
      assert.match(r.stderr, message, r.stderr);
      assert.equal(r.stdout, '', 'nothing on stdout for a script to take as an answer');
      assert.ok(!r.stderr.includes(t.adminToken));
    }
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

test('options: one spelling each (a mistyped one is unknown, never an argument); mgw webhook --help; a reader that stops reading ends mgw quietly', async () => {
  const { instance } = await t.createInstance('cli-options', { link: false });
  for (const args of [
    ['webhook', 'set', instance.id, 'https://example.com/h', 'some-secret-value', '--allowPrivate'],
    ['webhook', 'set', instance.id, 'https://example.com/h', 'some-secret-value', '--allow_private'],
    ['instances', '-json'],
    ['delete', instance.id, '--YES'],
  ]) {
    const r = await mgw(args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
    assert.match(r.stderr, new RegExp(`unknown option ${args[args.length - 1]} \\(usage: `), r.stderr);
  }
  assert.equal((await mgw(['get', instance.id, '-h'])).code, 0, '-h still asks for help');
  for (const help of ['--help', '-h']) {
    const r = await mgw(['webhook', help]);
    assert.equal(r.code, 0, r.stderr);
    for (const verb of ['webhook show', 'webhook set', 'webhook delete']) assert.ok(r.stdout.includes(`mgw ${verb} `), r.stdout);
  }
  // stdout closed before mgw writes (`mgw instances --json | head -0`)
  const closed = await new Promise<Run>((resolve) => {
    const child = spawn(process.execPath, [MGW, 'instances', '--json'], { env: { ...process.env, MGW_URL: t.url, ADMIN_TOKEN: t.adminToken }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
    child.once('exit', (code) => resolve({ stdout: '', stderr, code: code ?? -1 }));
  });
  assert.equal(closed.code, 0, closed.stderr);
  assert.equal(closed.stderr, '', 'no stack trace');
});

test('a gateway that takes the connection and never answers: mgw gives up after MGW_TIMEOUT_MS, saying so (not that it could not reach it); mgw help <verb>', async () => {
  const silent = createServer(() => undefined);
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const { port } = silent.address() as AddressInfo;
  try {
    const r = await mgw(['instances'], { MGW_URL: `http://127.0.0.1:${port}`, MGW_TIMEOUT_MS: '300' });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, new RegExp(`^mgw: the gateway at http://127\\.0\\.0\\.1:${port} did not answer GET /admin/v1/instances within 300 ms \\(MGW_TIMEOUT_MS\\): what it did is not known`));
    for (const bad of ['0', '-5', '1.5', 'soon', '3600001']) {
      const b = await mgw(['instances'], { MGW_URL: `http://127.0.0.1:${port}`, MGW_TIMEOUT_MS: bad });
      assert.equal(b.code, 2, `${bad}: ${b.stderr}`);
      assert.equal(b.stderr.trim(), 'mgw: MGW_TIMEOUT_MS must be a whole number of milliseconds from 1 to 3600000');
    }
  } finally {
    silent.close();
  }
  const help = await mgw(['help', 'create']);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^usage: mgw create <name>/);
  assert.match((await mgw(['help', 'webhook', 'set'])).stdout, /^usage: mgw webhook set <id> <url> <secret>/);
});

test('a redirect, a connection broken after the request went, a 200 saying success:false: each exits 1, and none is taken for done', async () => {
  const server = createHttpServer((req, res) => {
    if (req.url?.includes('/moved')) {
      res.writeHead(301, { location: `http://127.0.0.1:1/elsewhere${req.url}` });
      res.end();
    } else if (req.url?.includes('/broken')) {
      // the request arrived (the gateway may have acted), the answer never comes back
      req.resume();
      req.on('end', () => req.socket.destroy());
    } else {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"success":false,"error":"refused in a 200","code":"X"}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    const moved = await mgw(['create', 'x'], { MGW_URL: `http://127.0.0.1:${port}/moved` });
    assert.equal(moved.code, 1, moved.stdout + moved.stderr);
    assert.match(moved.stderr, /the answer to POST \/admin\/v1\/instances from \S+ is not the gateway's \(HTTP 301/);
    const broken = await mgw(['rotate-key', 'abc'], { MGW_URL: `http://127.0.0.1:${port}/broken` });
    assert.equal(broken.code, 1, broken.stdout + broken.stderr);
    assert.match(broken.stderr, /the connection to the gateway at \S+ broke before its answer to POST \/admin\/v1\/instances\/abc\/\S+ \(\S+\): what it did is not known/);
    const refused = await mgw(['create', 'x'], { MGW_URL: `http://127.0.0.1:${port}` });
    assert.equal(refused.code, 1, refused.stdout);
    assert.match(refused.stdout, /"success": false/);
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  // a secret from stdin that is not UTF-8 (a file of random bytes): refused, never changed on its way
  const { instance } = await t.createInstance('cli-binary-secret', { link: false });
  const binary = await mgwWithInput(['webhook', 'set', instance.id, `${hook.url}/bin`, '-', '--allow-private'], Buffer.from([0x62, 0x69, 0x6e, 0xff, 0xfe, 0x73, 0x0a]));
  assert.equal(binary.code, 2, binary.stderr);
  assert.match(binary.stderr, /the secret given as - is not UTF-8 text/);
  // typos: an unknown verb after help, a mistyped webhook subcommand
  assert.equal((await mgw(['help', 'bogus'])).code, 2);
  const typo = await mgw(['webhook', 'shwo', instance.id]);
  assert.equal(typo.code, 2);
  assert.match(typo.stderr, /missing a subcommand: show, set or delete/);
  const help = await mgw(['webhook', '--help']);
  for (const verb of ['webhook-test', 'deliveries', 'redeliver']) assert.ok(help.stdout.includes(`mgw ${verb} `), verb);
});
