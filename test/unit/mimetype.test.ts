/** Media types read as RFC 2045 defines them (src/media/mimetype.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mimeEssence, normaliseMimetype, parseMimetype, sameMimetype } from '../../src/media/mimetype.js';

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

test('normaliseMimetype: one spelling of what parseMimetype takes, null for what it refuses', () => {
  assert.equal(normaliseMimetype(' Audio/OGG ; Codecs = "opus" ; rate=48000 '), 'audio/ogg;codecs=opus;rate=48000');
  assert.equal(normaliseMimetype('text/plain; Charset=UTF-8'), 'text/plain;charset=UTF-8', 'a value keeps its case');
  assert.equal(normaliseMimetype('text/plain; title="a \\"b\\" c"; e=""'), 'text/plain;title="a \\"b\\" c";e=""', 'quoted where not a token');
  assert.equal(normaliseMimetype(`a/${'b'.repeat(253)}`), `a/${'b'.repeat(253)}`);
  for (const bad of [`a/${'b'.repeat(254)}`, 'text/plain; x="\u0000"', 'text/plain; x="a\r\nX-Y: z"', 'text/plain; x="\u20ac"', 'a/b; x=1; X=2', 'image/png;', null, undefined]) {
    assert.equal(normaliseMimetype(bad), null, JSON.stringify(bad));
  }
  // what the parser takes, the normal form is the same type
  for (const given of ['AUDIO/OGG;  codecs="opus"', 'a/b; y="2";X=1', 'text/plain; title="tab\there"']) {
    const normal = normaliseMimetype(given);
    assert.ok(normal !== null && sameMimetype(normal, given), given);
  }
});
