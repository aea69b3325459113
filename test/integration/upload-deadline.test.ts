/**
 * An upload whose body stops arriving is answered at the gateway's upload deadline (docs/api.md, Limits: 120 s),
 * `408 REQUEST_TIMEOUT` with `data.deadlineMs`, and its staged file is removed once its connection closes. Found
 * from the outside: three uploads that stopped half-way were answered only at Node's own request timeout, 308 s,
 * each holding a 10 MB staged file that long. The deadline runs on the gateway's clock (simulated here); the
 * socket is real.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { startTestGateway, waitFor, type TestGateway } from '../helpers/gateway.js';
import { DEADLINES } from '../../src/actors/port.js';

let g: TestGateway;
let key = '';
let instanceId = '';

before(async () => {
  g = await startTestGateway({ label: 'upload_deadline', simulated: true });
  const created = await g.createInstance('up', { link: false });
  key = created.apiKey;
  instanceId = created.instance.id;
});
after(async () => g.stop());

const staged = async () => (await readdir(path.join(g.dataDir, 'media', instanceId)).catch(() => [] as string[])).filter((f) => f.endsWith('.tmp'));

test('a stalled upload is 408 REQUEST_TIMEOUT at the upload deadline, and its staged file goes with its connection', async () => {
  const boundary = 'mgwDeadlineBoundary01';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="half.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const u = new URL(g.url);
  const socket = net.connect(Number(u.port), u.hostname);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => {
    answer += d;
  });
  socket.on('error', () => undefined);
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  socket.write(`POST /api/v2/media HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer ${key}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\n` +
    `Content-Length: ${2 * 1024 * 1024}\r\n\r\n${head}`);
  socket.write(Buffer.alloc(256 * 1024, 0x5a));
  await waitFor(async () => (await staged()).length === 1, 'the file staged as it arrives');

  // the body stops; just short of the deadline nothing is answered yet
  await g.advance(DEADLINES.upload - 1_000, 1_000);
  assert.equal(answer, '', 'no answer before the deadline');
  await g.advanceUntil(() => answer.includes('\r\n\r\n{'), 'the answer at the deadline', { stepMs: 250, maxMs: 5_000 });
  assert.match(answer, /^HTTP\/1\.1 408 /);
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { success: boolean; code: string; data: { deadlineMs: number } };
  assert.equal(body.success, false);
  assert.equal(body.code, 'REQUEST_TIMEOUT');
  assert.equal(body.data.deadlineMs, DEADLINES.upload);
  assert.match(answer, /connection: close/i);

  socket.destroy();
  await closed;
  await waitFor(async () => (await staged()).length === 0, 'the staged file removed');
  const { rows } = await g.db.pool.query<{ n: string }>('SELECT count(*) AS n FROM media WHERE instance_id = $1', [instanceId]);
  assert.equal(Number(rows[0]?.n), 0, 'nothing stored');
});

test('an upload whose body arrives within the deadline is stored', async () => {
  const form = new FormData();
  form.append('file', new Blob([Buffer.alloc(1024, 0x41)], { type: 'application/octet-stream' }), 'whole.bin');
  const res = await fetch(`${g.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  assert.equal(res.status, 201, await res.clone().text());
});
