/**
 * `Expect: 100-continue` over raw sockets against the whole gateway (curl sends it with every body over
 * 1 MiB): `100 Continue` is answered only once the request passed its credentials, its route and the checks
 * of its headers, right before its body is read. A refusal before that is the whole answer, and the client
 * never sends the body. Found from the outside: Node answered `100 Continue` at once, so a client with a
 * wrong key sent its whole upload to be told 401.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let t: TestGateway;
let key = '';
let port = 0;

before(async () => {
  t = await startTestGateway({ label: 'gw_continue', env: { MEDIA_UPLOAD_MAX_BYTES: String(2 * 1024 * 1024) } });
  key = (await t.createInstance('continue')).apiKey;
  port = Number(new URL(t.url).port);
});
after(async () => {
  await t.stop();
});

interface Exchange {
  /** everything the server wrote before the body was sent (or before it closed, if the body never was) */
  beforeBody: string;
  /** everything the server wrote, to its close or to the end of the final answer */
  all: string;
  bodySent: boolean;
}

/**
 * Sends `head` alone, as a client that waits for `100 Continue` does, and sends `body` only if the server asks
 * for it. Reads until the server closes the connection or a final answer (Content-Length) is complete.
 */
function expectContinue(head: string, body: Buffer): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    let received = Buffer.alloc(0);
    let beforeBody = '';
    let bodySent = false;
    const socket = net.connect(port, '127.0.0.1', () => socket.write(head));
    const finish = () => {
      socket.destroy();
      resolve({ beforeBody: bodySent ? beforeBody : received.toString('latin1'), all: received.toString('latin1'), bodySent });
    };
    socket.setTimeout(5_000, () => {
      socket.destroy();
      reject(new Error(`no answer within 5 s; received:\n${received.toString('latin1')}`));
    });
    socket.on('data', (c: Buffer) => {
      received = Buffer.concat([received, c]);
      const text = received.toString('latin1');
      if (!bodySent && text.startsWith('HTTP/1.1 100 Continue\r\n\r\n')) {
        beforeBody = text;
        bodySent = true;
        socket.write(body);
      }
      const final = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
      const split = final.indexOf('\r\n\r\n');
      const length = /\r\ncontent-length: (\d+)/i.exec(final.slice(0, split));
      if (split > 0 && length && Buffer.byteLength(final.slice(split + 4), 'latin1') >= Number(length[1])) finish();
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') reject(err);
    });
    socket.on('close', finish);
  });
}

const finalAnswer = (e: Exchange) => {
  const text = e.all.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
  const split = text.indexOf('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]);
  return { status, head: text.slice(0, split), body: JSON.parse(text.slice(split + 4)) as { success: boolean; code?: string } };
};

function jsonHead(path: string, authorization: string | null, length: number): string {
  const auth = authorization === null ? '' : `Authorization: Bearer ${authorization}\r\n`;
  return `POST ${path} HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
}

const message = Buffer.from(JSON.stringify({ phone: '4915112340001', message: 'after 100 Continue' }));

test('a send with a valid key: 100 Continue, then the body, then 202', async () => {
  const e = await expectContinue(jsonHead('/api/v2/send-message', key, message.length), message);
  assert.ok(e.bodySent, `100 Continue first:\n${e.all}`);
  const r = finalAnswer(e);
  assert.equal(r.status, 202, e.all);
  assert.equal(r.body.success, true);
});

test('a wrong key, no key, an unknown route: the refusal without 100 Continue, the body never sent', async () => {
  const cases: Array<[string, string | null, number, string]> = [
    ['/api/v2/send-message', 'mgw_live_this_key_does_not_exist_0000000000', 401, 'INVALID_API_KEY'],
    ['/api/v2/send-message', null, 401, 'UNAUTHORIZED'],
    ['/api/v2/no-such-route', key, 404, 'NOT_FOUND'],
  ];
  for (const [path, auth, status, code] of cases) {
    const e = await expectContinue(jsonHead(path, auth, message.length), message);
    assert.equal(e.bodySent, false, `${path}: no 100 Continue before the refusal:\n${e.all}`);
    const r = finalAnswer(e);
    assert.equal(r.status, status, e.all);
    assert.equal(r.body.code, code, e.all);
    // the client may still send the body it announced: the connection is not reused
    assert.match(r.head, /\r\nconnection: close/i, e.all);
  }
});

test('a JSON body declared over the limit and a body that is not JSON: refused before 100 Continue', async () => {
  const tooLarge = await expectContinue(jsonHead('/api/v2/send-message', key, 11 * 1024 * 1024), message);
  assert.equal(tooLarge.bodySent, false, tooLarge.all);
  assert.equal(finalAnswer(tooLarge).status, 413, tooLarge.all);
  const head = jsonHead('/api/v2/send-message', key, message.length).replace('application/json', 'text/plain');
  const notJson = await expectContinue(head, message);
  assert.equal(notJson.bodySent, false, notJson.all);
  assert.equal(finalAnswer(notJson).status, 415, notJson.all);
});

function uploadHead(length: number, authorization: string): { head: string; body: Buffer } {
  const boundary = 'continue-boundary-7f3a';
  const body = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nuploaded after 100 Continue\r\n--${boundary}--\r\n`,
  );
  const head = `POST /api/v2/media HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${authorization}\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: ${length < 0 ? body.length : length}\r\nExpect: 100-continue\r\n\r\n`;
  return { head, body };
}

test('an upload: 100 Continue then 201; a wrong key or a declared size over MEDIA_UPLOAD_MAX_BYTES refused first', async () => {
  const fine = uploadHead(-1, key);
  const ok = await expectContinue(fine.head, fine.body);
  assert.ok(ok.bodySent, ok.all);
  assert.equal(finalAnswer(ok).status, 201, ok.all);

  const wrong = uploadHead(-1, 'mgw_live_this_key_does_not_exist_0000000000');
  const refused = await expectContinue(wrong.head, wrong.body);
  assert.equal(refused.bodySent, false, refused.all);
  assert.equal(finalAnswer(refused).status, 401, refused.all);

  const big = uploadHead(8 * 1024 * 1024, key);
  const tooLarge = await expectContinue(big.head, big.body);
  assert.equal(tooLarge.bodySent, false, tooLarge.all);
  assert.equal(finalAnswer(tooLarge).status, 413, tooLarge.all);
});

test('Expect: 100-continue with HTTP/1.0 is not answered with 100 (HTTP/1.0 has no such answer)', async () => {
  const head = jsonHead('/api/v2/send-message', key, message.length).replace('HTTP/1.1', 'HTTP/1.0');
  const e = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(port, '127.0.0.1', () => socket.write(Buffer.concat([Buffer.from(head), message])));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
  });
  assert.match(e, /^HTTP\/1\.1 202 /, e);
});
