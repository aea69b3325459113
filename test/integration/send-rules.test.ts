/**
 * The v2 send routes' rules on their content, found from the outside: what a sticker, a voice note or a
 * document may be, over real HTTP to a whole gateway. A refusal is the answer at acceptance, never a job that
 * fails at dispatch.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
let key = '';
before(async () => {
  t = await startTestGateway({ label: 'send_rules' });
  key = (await t.createInstance('rules', { settings: { quietHours: null, maxPerHour: null, maxPer24h: null } })).apiKey;
});
after(async () => {
  await t.stop();
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
