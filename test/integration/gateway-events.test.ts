/**
 * Events through the whole gateway to a real receiver on loopback: network events (an incoming message with
 * its media block, stored when the instance keeps incoming media), queue events of a send, signatures that
 * verify with the documented snippet's logic, and the attachment through GET /api/v2/messages/:id/media.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHash, createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { verifyWebhook } from '../../src/webhooks/sign.js';

const SECRET = 'gateway-events-secret-0123456789';
let t: TestGateway;
let receiver: http.Server;
let url = '';
const got: { event: string; eventId: string; data: Record<string, unknown>; raw: string; headers: http.IncomingHttpHeaders }[] = [];

before(async () => {
  receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString();
      const env = JSON.parse(raw) as { event: string; eventId: string; data: Record<string, unknown> };
      got.push({ ...env, raw, headers: req.headers });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;
  t = await startTestGateway({ label: 'gw_events', simulated: true, env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
after(async () => {
  await t.stop();
  receiver.close();
});

test('incoming message with media, stored; queue events of a send; every delivery signed', async () => {
  const { instance, apiKey, phone } = await t.createInstance('events', {
    settings: { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null, maxPerHour: null, maxPer24h: null, storeIncomingMedia: true },
  });
  const put = await t.admin('PUT', `/admin/v1/instances/${instance.id}/webhook`, { url, secret: SECRET, events: ['*'] });
  assert.equal(put.status, 200, put.text);

  const bytes = Buffer.from('%PDF-1.4 a tiny test document\n');
  const inbound = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/messages`, {
    from: '4917612345678', type: 'media', media: { mimetype: 'application/pdf', data: bytes.toString('base64'), filename: 'offer.pdf' }, caption: 'see attached',
  });
  assert.equal(inbound.status, 201, inbound.text);
  const msgId = String(inbound.body.data?.messageId);

  const message = await t.advanceUntil(() => got.find((e) => e.event === 'message'), 'message event', { maxMs: 30_000 });
  for (const k of ['id', 'chatId', 'from', 'to', 'author', 'body', 'type', 'timestamp', 'fromMe', 'hasMedia', 'hasQuotedMsg', 'ack', 'isForwarded', 'deviceType', 'location', 'vCards']) {
    assert.ok(k in message.data, `message has ${k}`);
  }
  assert.equal(message.data.id, msgId);
  assert.equal(message.data.from, '4917612345678@c.us');
  assert.equal(message.data.fromMe, false);
  assert.equal(message.data.hasMedia, true);
  assert.ok(Number(message.data.timestamp) > 1e12, 'timestamp in unix milliseconds');
  const media = message.data.media as Record<string, unknown>;
  assert.equal(media.mimetype, 'application/pdf');
  assert.equal(media.filename, 'offer.pdf');
  assert.equal(media.size, bytes.length);
  assert.equal(media.stored, true);
  assert.match(String(media.mediaId), /^md_/);
  assert.equal(media.url, `/api/v2/media/${String(media.mediaId)}`);

  // signatures: sha256 over the body, and t=…,v1=… over `${t}.${body}`
  const h = message.headers;
  assert.equal(h['x-event-type'], 'message');
  assert.equal(h['x-event-id'], message.eventId);
  assert.equal(h['x-event-version'], '2');
  assert.equal(h['x-instance-id'], instance.id);
  assert.equal(h['x-webhook-signature'], `sha256=${createHmac('sha256', SECRET).update(message.raw).digest('hex')}`);
  const verdict = verifyWebhook({ rawBody: Buffer.from(message.raw), headers: h as Record<string, string>, secret: SECRET, now: t.clock.now() });
  assert.ok(verdict.ok, JSON.stringify(verdict));

  // the attachment through the API: metadata and the bytes
  const meta = await t.api(apiKey, 'GET', `/api/v2/messages/${encodeURIComponent(msgId)}/media`);
  assert.equal(meta.status, 200, meta.text);
  assert.equal(meta.body.data?.stored, true);
  assert.equal(meta.body.data?.mediaId, media.mediaId);
  const raw = await fetch(`${t.url}/api/v2/messages/${encodeURIComponent(msgId)}/media?download=1`, { headers: { authorization: `Bearer ${apiKey}` } });
  assert.equal(raw.status, 200);
  assert.equal(raw.headers.get('cache-control'), 'private, max-age=300');
  const back = Buffer.from(await raw.arrayBuffer());
  assert.equal(createHash('sha256').update(back).digest('hex'), createHash('sha256').update(bytes).digest('hex'));
  const status = await t.api(apiKey, 'GET', '/api/status');
  assert.equal((status.body.data?.messages as { received: number }).received, 1);

  // a send: message.queued then message.sent, with their SPEC.md fields
  const s = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4917612345678', message: 'thanks', idempotencyKey: 'events-send-0001' });
  assert.equal(s.status, 202, s.text);
  const jobId = String(s.body.data?.jobId);
  const sent = await t.advanceUntil(() => got.find((e) => e.event === 'message.sent' && e.data.jobId === jobId), 'message.sent');
  const queued = got.find((e) => e.event === 'message.queued' && e.data.jobId === jobId);
  assert.ok(queued);
  assert.deepEqual(Object.keys(queued.data).sort(), ['chatId', 'etaSeconds', 'idempotencyKey', 'jobId', 'queuePosition', 'scheduledAt']);
  assert.equal(queued.data.idempotencyKey, 'events-send-0001');
  assert.equal(queued.data.queuePosition, 1, 'the position the job has in the queue, not 0');
  assert.deepEqual(Object.keys(sent.data).sort(), ['deliveryConfidence', 'dispatchedAt', 'jobId', 'messageId'].sort());
  assert.equal(sent.data.deliveryConfidence, 'confirmed');
  assert.ok(got.indexOf(queued) < got.indexOf(sent), 'queued is delivered before sent');
  assert.ok(!got.some((e) => JSON.stringify(e.data).includes(apiKey)), 'no API key in any payload');
  assert.ok(phone.length > 0);
});

test('an incoming attachment named with a path: the name alone in the metadata, the stored record and the download header', async () => {
  // found from the outside: `../../evil.png` came out as the download's filename (uploads were cleaned, incoming names not)
  for (const storeIncomingMedia of [false, true]) {
    const { instance, apiKey } = await t.createInstance(`evilname-${String(storeIncomingMedia)}`, { settings: { storeIncomingMedia } });
    const inbound = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/messages`, {
      from: '4917612345678', type: 'media', media: { mimetype: 'image/png', data: Buffer.from('png bytes').toString('base64'), filename: '../../evil\\x\u0007.png' },
    });
    assert.equal(inbound.status, 201, inbound.text);
    const msgId = encodeURIComponent(String(inbound.body.data?.messageId));
    const meta = await t.api(apiKey, 'GET', `/api/v2/messages/${msgId}/media`);
    assert.equal(meta.status, 200, meta.text);
    assert.equal(meta.body.data?.filename, 'x.png', meta.text);
    if (storeIncomingMedia) {
      const stored = await t.api(apiKey, 'GET', `/api/v2/media/${String(meta.body.data?.mediaId)}`);
      assert.equal(stored.body.data?.filename, 'x.png', stored.text);
    }
    const raw = await fetch(`${t.url}/api/v2/messages/${msgId}/media?download=1`, { headers: { authorization: `Bearer ${apiKey}` } });
    assert.equal(raw.status, 200);
    assert.equal(raw.headers.get('content-disposition'), `attachment; filename="x.png"; filename*=UTF-8''x.png`);
    await raw.arrayBuffer();
  }
});

test('an incoming attachment whose type holds a line break or a character beyond Latin-1 downloads, its type served as a media type', async () => {
  // found from the outside: the type as the sender gave it went into the Content-Type header: node refused it, 500
  for (const storeIncomingMedia of [false, true]) {
    const { instance, apiKey } = await t.createInstance(`badtype-${String(storeIncomingMedia)}`, { settings: { storeIncomingMedia } });
    for (const [mimetype, served] of [['image/png\r\nX-Evil: 1', 'application/octet-stream'], ['image/png; name="\u2603"', 'application/octet-stream'], ['Image/PNG', 'image/png']]) {
      const inbound = await t.admin('POST', `/sandbox/v1/instances/${instance.id}/messages`, {
        from: '4917612345678', type: 'media', media: { mimetype, data: Buffer.from('png bytes').toString('base64') },
      });
      assert.equal(inbound.status, 201, inbound.text);
      const msgId = encodeURIComponent(String(inbound.body.data?.messageId));
      const raw = await fetch(`${t.url}/api/v2/messages/${msgId}/media?download=1`, { headers: { authorization: `Bearer ${apiKey}` } });
      const body = Buffer.from(await raw.arrayBuffer());
      assert.equal(raw.status, 200, `${JSON.stringify(mimetype)} (store ${String(storeIncomingMedia)}): ${body.toString()}`);
      assert.equal(raw.headers.get('content-type'), served);
      assert.equal(raw.headers.get('x-evil'), null);
      assert.equal(body.toString(), 'png bytes');
      // the metadata says the same type, and so does the stored media a send may name by its id
      const meta = await t.api(apiKey, 'GET', `/api/v2/messages/${msgId}/media`);
      assert.equal(meta.status, 200, meta.text);
      assert.equal(meta.body.data?.mimetype, served, meta.text);
      if (storeIncomingMedia) {
        const mediaId = String(meta.body.data?.mediaId);
        const record = await t.api(apiKey, 'GET', `/api/v2/media/${mediaId}`);
        assert.equal(record.body.data?.mimetype, served, record.text);
      }
    }
  }
});

test('no webhook configured: nothing is written to the outbox', async () => {
  const { instance, apiKey } = await t.createInstance('quiet', { settings: { minDelayMs: 1000, maxDelayMs: 1000, quietHours: null } });
  const s = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4917612345678', message: 'x' });
  assert.equal(s.status, 202);
  const { rows } = await t.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE instance_id = $1', [instance.id]);
  assert.equal(rows[0]?.n, 0);
});
