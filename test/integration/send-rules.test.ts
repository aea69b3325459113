/**
 * The v2 send routes' rules on their content, found from the outside: what a sticker, a voice note or a
 * document may be, over real HTTP to a whole gateway. A refusal is the answer at acceptance, never a job that
 * fails at dispatch.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { setNetworkDefaults } from '../../src/media/ssrf.js';

let t: TestGateway;
let key = '';
/** a loopback server playing a public media host: `/swap?get=<type>` answers HEAD as image/png and GET as <type> */
let media: http.Server;
let mediaPort = 0;
let restoreNetwork: () => void = () => undefined;
before(async () => {
  restoreNetwork = setNetworkDefaults({ resolver: async () => [{ address: '127.0.0.1', family: 4 }], allowAddress: (a) => a === '127.0.0.1' });
  media = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const type = req.method === 'HEAD' ? 'image/png' : (url.searchParams.get('get') ?? 'image/png');
    res.writeHead(200, { 'content-type': type, 'content-length': 4 }).end(req.method === 'HEAD' ? undefined : 'GIF8');
  });
  await new Promise<void>((r) => media.listen(0, '127.0.0.1', r));
  mediaPort = (media.address() as AddressInfo).port;
  t = await startTestGateway({ label: 'send_rules' });
  key = (await t.createInstance('rules', { settings: { quietHours: null, maxPerHour: null, maxPer24h: null } })).apiKey;
});
after(async () => {
  await t.stop();
  media.close();
  restoreNetwork();
});

const TO = { phone: '4915112345678' };
const PNG_B64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

test('send-sticker: a GIF is refused as video is (STICKER_VIDEO_UNSUPPORTED), a still image is accepted', async () => {
  for (const mimetype of ['image/gif', 'IMAGE/GIF', 'image/gif; x=1', 'video/mp4']) {
    const r = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaBase64: PNG_B64, mimetype });
    assert.equal(r.status, 400, `${mimetype}: ${r.text}`);
    assert.equal(r.body.code, 'STICKER_VIDEO_UNSUPPORTED', mimetype);
    assert.equal(r.body.data?.field, 'mimetype');
  }
  const png = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaBase64: PNG_B64, mimetype: 'image/png' });
  assert.equal(png.status, 202, png.text);
});

async function upload(data: Buffer, type: string, filename: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([data], { type }), filename);
  const res = await fetch(`${t.url}/api/v2/media`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const body = (await res.json()) as { data: { mediaId: string } };
  assert.equal(res.status, 201, JSON.stringify(body));
  return body.data.mediaId;
}

test('send-sticker from a mediaId: the stored record\'s type is the one checked, at acceptance', async () => {
  const text = await upload(Buffer.from('not a picture'), 'text/plain', 'notes.txt');
  const r = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaId: text });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.code, 'VALIDATION_FAILED');
  assert.equal(r.body.data?.field, 'mediaId');
  assert.equal(r.body.error, 'the stored media is text/plain: a sticker needs an image/* mimetype');

  const gif = await upload(Buffer.from('GIF89a'), 'image/gif', 'a.gif');
  const g = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaId: gif });
  assert.equal(g.status, 400, g.text);
  assert.equal(g.body.code, 'STICKER_VIDEO_UNSUPPORTED');
  assert.equal(g.body.data?.field, 'mediaId');

  // a stored image: accepted, and no warning that the type was not given (the record has it)
  const png = await upload(Buffer.from(PNG_B64, 'base64'), 'image/png', 'a.png');
  const p = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaId: png });
  assert.equal(p.status, 202, p.text);
  assert.equal(p.body.data?.warnings, undefined, p.text);

  // a voice note's type is the required mimetype (the type it is sent as), whatever the record's
  const voice = await t.api(key, 'POST', '/api/v2/send-voice', { ...TO, mediaId: png });
  assert.equal(voice.status, 400, voice.text);
  assert.equal(voice.body.data?.field, 'mimetype');
});

test('send-voice: the accepted types are compared as media types (RFC 2045), not as text', async () => {
  for (const mimetype of ['audio/ogg; codecs="opus"', 'AUDIO/OGG;  codecs=opus', 'audio/ogg; CODECS="opus"', 'audio/ogg;codecs=opus', 'Audio/Opus']) {
    const r = await t.api(key, 'POST', '/api/v2/send-voice', { ...TO, mediaBase64: 'T2dnUw==', mimetype });
    assert.equal(r.status, 202, `${mimetype}: ${r.text}`);
    assert.equal(r.body.data?.warnings, undefined, `${mimetype}: an OGG voice note has no warning`);
  }
  for (const mimetype of ['audio/ogg; codecs="vorbis"', 'audio/ogg; codecs=opus; rate=48000', 'video/ogg; codecs="opus"']) {
    const r = await t.api(key, 'POST', '/api/v2/send-voice', { ...TO, mediaBase64: 'T2dnUw==', mimetype });
    assert.equal(r.status, 400, `${mimetype}: ${r.text}`);
    assert.equal(r.body.code, 'VOICE_MIMETYPE_UNSUPPORTED', mimetype);
  }
  const mp3 = await t.api(key, 'POST', '/api/v2/send-voice', { ...TO, mediaBase64: 'T2dnUw==', mimetype: 'Audio/MPEG' });
  assert.equal(mp3.status, 202, mp3.text);
  assert.deepEqual(mp3.body.data?.warnings, ['non-ogg audio may not render as PTT on all clients']);
});

test('send-document: a blank filename is refused like a missing one (it would be sent without a name)', async () => {
  for (const filename of ['   ', '\t', 'folder/', '..']) {
    const r = await t.api(key, 'POST', '/api/v2/send-document', { ...TO, mediaBase64: PNG_B64, mimetype: 'application/pdf', filename });
    assert.equal(r.status, 400, `${JSON.stringify(filename)}: ${r.text}`);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.equal(r.body.data?.field, 'filename');
  }
  const ok = await t.api(key, 'POST', '/api/v2/send-document', { ...TO, mediaBase64: PNG_B64, mimetype: 'application/pdf', filename: ' a.pdf ' });
  assert.equal(ok.status, 202, ok.text);
});

test('send-poll: a length in characters counts code points, not UTF-16 code units (an emoji is one)', async () => {
  const r = await t.api(key, 'POST', '/api/v2/send-poll', { ...TO, name: '😀'.repeat(255), options: ['😀'.repeat(100), 'ü'.repeat(100)] });
  assert.equal(r.status, 202, r.text);
  const over = await t.api(key, 'POST', '/api/v2/send-poll', { ...TO, name: 'q', options: ['a', '😀'.repeat(101)] });
  assert.equal(over.status, 400, over.text);
  assert.equal(over.body.data?.field, 'options.1');
  assert.equal(over.body.error, 'options.1 must be 1 to 100 characters long');
  const sticker = await t.api(key, 'POST', '/api/v2/send-sticker', { ...TO, mediaBase64: PNG_B64, mimetype: 'image/png', stickerName: '😀'.repeat(128) });
  assert.equal(sticker.status, 202, sticker.text);
});

test('send-sticker from a mediaUrl whose answer turns into a GIF after acceptance: failed at dispatch, nothing sent', async () => {
  // found from the outside: HEAD answered image/png (accepted), GET image/gif, and the GIF went out as a sticker
  const { instance, apiKey } = await t.createInstance('swapped', { settings: { minDelayMs: 0, maxDelayMs: 0, quietHours: null, maxPerHour: null, maxPer24h: null } });
  const jobs: Record<string, string> = {};
  for (const get of ['image/gif', 'video/mp4', 'image/webp']) {
    const r = await t.api(apiKey, 'POST', '/api/v2/send-sticker', { ...TO, mediaUrl: `http://cdn.example:${mediaPort}/swap?get=${encodeURIComponent(get)}` });
    assert.equal(r.status, 202, `${get}: ${r.text}`);
    jobs[get] = String(r.body.data?.jobId);
  }
  const ended = async (jobId: string) => {
    for (let i = 0; i < 400; i++) {
      const j = await t.api(apiKey, 'GET', `/api/v2/messages/${jobId}`);
      const state = String(j.body.data?.state);
      if (!['queued', 'scheduled', 'sending'].includes(state)) return j.body.data ?? {};
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`job ${jobId} did not end`);
  };
  for (const get of ['image/gif', 'video/mp4']) {
    const j = await ended(jobs[get] ?? '');
    assert.equal(j.state, 'failed', `${get}: ${JSON.stringify(j)}`);
    assert.equal(j.resultCode, 'MEDIA_DOWNLOAD_FAILED', get);
    assert.match(String(j.errorMessage), new RegExp(`the media is ${get.replace('/', '\\/')} now.*nothing was sent`), get);
  }
  assert.equal((await ended(jobs['image/webp'] ?? '')).state, 'sent', 'a still image is still sent');
  const ledger = await t.admin('GET', `/sandbox/v1/instances/${instance.id}/ledger`);
  const items = (ledger.body.data as { items: { type?: string; media?: { mimetype?: string } }[] }).items;
  assert.deepEqual(items.map((m) => m.media?.mimetype), ['image/webp'], 'only the still image reached the network');
});

test('a mediaUrl that is not http(s): data.reason names the rule (another scheme, or not a URL)', async () => {
  for (const [mediaUrl, reason] of [['ftp://cdn.example/a.png', 'scheme'], ['javascript:alert(1)', 'scheme'], [' http://cdn.example/a.png', 'invalid_url'], ['http:cdn.example/a.png', 'invalid_url']] as const) {
    const r = await t.api(key, 'POST', '/api/v2/send-media', { ...TO, mediaUrl });
    assert.equal(r.status, 400, `${mediaUrl}: ${r.text}`);
    assert.equal(r.body.code, 'VALIDATION_FAILED');
    assert.equal(r.body.error, 'mediaUrl must be an http or https URL');
    assert.deepEqual(r.body.data, { field: 'mediaUrl', reason }, mediaUrl);
  }
});
