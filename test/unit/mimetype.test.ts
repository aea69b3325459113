/** Media types read as RFC 2045 defines them (src/media/mimetype.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mimeEssence, parseMimetype, sameMimetype } from '../../src/media/mimetype.js';

test('parseMimetype: case-insensitive type and parameter names, quoted values unquoted, values kept as written', () => {
  const p = parseMimetype('Audio/OGG ; Codecs="op\\"us" ;rate=48000');
  assert.deepEqual(p && { essence: p.essence, params: [...p.params] }, { essence: 'audio/ogg', params: [['codecs', 'op"us'], ['rate', '48000']] });
  assert.deepEqual(parseMimetype('text/plain; charset=UTF-8')?.params.get('charset'), 'UTF-8');
  for (const bad of ['', 'audio', 'audio/', 'audio/ogg;', 'audio/ogg; codecs', 'audio/ogg; codecs="opus', 'audio/ogg; a=1; A=2', 'audio/ogg x']) {
    assert.equal(parseMimetype(bad), null, bad);
  }
});

test('sameMimetype: the same type and parameters, in any order and spelling', () => {
  assert.ok(sameMimetype('audio/ogg;codecs=opus', 'AUDIO/OGG;  codecs="opus"'));
  assert.ok(sameMimetype('a/b; x=1; y=2', 'a/b;y="2";X=1'));
  assert.ok(!sameMimetype('audio/ogg', 'audio/ogg;codecs=opus'));
  assert.ok(!sameMimetype('audio/ogg;codecs=opus', 'audio/ogg;codecs=vorbis'));
  assert.ok(!sameMimetype('audio/ogg', 'audio/ogg;'));
  assert.equal(mimeEssence(' Image/GIF ; x=1'), 'image/gif');
});
