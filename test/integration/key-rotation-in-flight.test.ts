/**
 * "Rotate: the old key stops working at once" holds for a request already on its way (src/http/auth.ts
 * keyStillValid). The guard verifies the key when the headers arrive, before the body is read; a client can take
 * minutes to send the body. Found from the outside: a send-message whose body came 45 s after its key's rotation
 * was accepted and sent, and an upload was stored. Each test sends the headers and half of a body on a raw socket,
 * rotates the key (or not, the control), then sends the rest, and reads the answer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

interface Raw {
  status: number;
  body: string;
}

/** POST `body` to `path` with `headers`; `between` runs once the headers and the body's first half were sent. */
async function halfThenRest(t: TestGateway, path: string, headers: Record<string, string>, body: Buffer, between: () => Promise<void>): Promise<Raw> {
  const { port } = new URL(t.url);
  const socket = net.connect(Number(port), '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const chunks: Buffer[] = [];
  socket.on('data', (c: Buffer) => chunks.push(c));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', `Content-Length: ${body.length}`, 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n');
  const half = Math.floor(body.length / 2);
  socket.write(Buffer.concat([Buffer.from(`${head}\r\n\r\n`), body.subarray(0, half)]));
  await between();
  socket.end(body.subarray(half));
  await ended;
  const text = Buffer.concat(chunks).toString('utf8');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
  return { status, body: text.slice(text.indexOf('\r\n\r\n') + 4) };
}

const send = Buffer.from(JSON.stringify({ phone: '4915112345678', message: 'sent after the rotation?' }));

async function withGateway(label: string, run: (t: TestGateway) => Promise<void>): Promise<void> {
  const t = await startTestGateway({ label });
  try {
    await run(t);
  } finally {
    await t.stop();
  }
}

const jobsOf = async (t: TestGateway, instanceId: string) =>
  (await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs WHERE instance_id = $1', [instanceId])).rows[0]?.n;

test('a v2 send whose key is rotated while its body arrives is 401 INVALID_API_KEY, and nothing is accepted', async () => {
  await withGateway('rotate_inflight_v2', async (t) => {
    const { instance, apiKey } = await t.createInstance('rotated');
    const auth = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
    const r = await halfThenRest(t, '/api/v2/send-message', auth, send, async () => {
      const rotated = await t.admin('POST', `/admin/v1/instances/${instance.id}/keys`);
      assert.equal(rotated.status, 201, rotated.text);
      assert.equal((await t.api(apiKey, 'GET', '/api/status')).status, 401, 'a new request with the old key is refused');
    });
    assert.equal(r.status, 401, r.body);
    assert.equal((JSON.parse(r.body) as { code?: string }).code, 'INVALID_API_KEY');
    assert.equal(await jobsOf(t, instance.id), 0);
  });
});

test('control: the same slow body without a rotation is accepted', async () => {
  await withGateway('rotate_inflight_ctl', async (t) => {
    const { instance, apiKey } = await t.createInstance('kept');
    const r = await halfThenRest(t, '/api/v2/send-message', { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, send, async () => {
      // another instance's rotation changes nothing for this key
      const other = await t.createInstance('other');
      assert.equal((await t.admin('POST', `/admin/v1/instances/${other.instance.id}/keys`)).status, 201);
    });
    assert.equal(r.status, 202, r.body);
    assert.equal(await jobsOf(t, instance.id), 1);
  });
});

test('a v1 send whose key is rotated while its body arrives is refused as an unknown key is, and nothing is accepted', async () => {
  await withGateway('rotate_inflight_v1', async (t) => {
    const { instance, apiKey } = await t.createInstance('rotated1');
    const fresh = await t.api('wapi_nobody_0123456789abcdef0123', 'POST', '/api/send-message', { phone: '4915112345678', message: 'x' });
    const r = await halfThenRest(t, '/api/send-message', { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' }, send, async () => {
      assert.equal((await t.admin('POST', `/admin/v1/instances/${instance.id}/keys`)).status, 201);
    });
    assert.equal(r.status, fresh.status, r.body);
    assert.equal(r.body, fresh.text);
    assert.equal(await jobsOf(t, instance.id), 0);
  });
});

test('an upload whose key is rotated while the file arrives is 401 INVALID_API_KEY, and nothing is stored', async () => {
  await withGateway('rotate_inflight_media', async (t) => {
    const { instance, apiKey } = await t.createInstance('rotatedm');
    const boundary = 'xXboundaryXx';
    const file = Buffer.alloc(64 * 1024, 7);
    const body = Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      file,
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
    const r = await halfThenRest(t, '/api/v2/media', { Authorization: `Bearer ${apiKey}`, 'Content-Type': `multipart/form-data; boundary=${boundary}` }, body, async () => {
      assert.equal((await t.admin('POST', `/admin/v1/instances/${instance.id}/keys`)).status, 201);
    });
    assert.equal(r.status, 401, r.body);
    assert.equal((JSON.parse(r.body) as { code?: string }).code, 'INVALID_API_KEY');
    const { rows } = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM media WHERE instance_id = $1', [instance.id]);
    assert.equal(rows[0]?.n, 0);
  });
});
