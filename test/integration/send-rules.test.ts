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
