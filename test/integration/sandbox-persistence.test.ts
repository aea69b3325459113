/**
 * The sandbox network's state on disk: links, chats, acks in progress and the ledger come back after a
 * restart of the hosting process; a journal line torn by a kill mid-append is ignored.
 */
import { test, describe, after } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simulatedClock } from '../../src/clock.js';
import type { MessageAck } from '../../src/drivers/contract.js';
import { SandboxDriver } from '../../src/drivers/sandbox/driver.js';
import { inProcessSandboxApi } from '../../src/drivers/sandbox/in-process.js';
import { SandboxNetwork } from '../../src/sandbox/network.js';

const ME = '4915100000001';
const ALICE = '4917600000042';

async function readyDriver(net: SandboxNetwork, instanceId: string): Promise<SandboxDriver> {
  const d = new SandboxDriver({ instanceId, api: inProcessSandboxApi(net) });
  const ready = new Promise<void>((resolve) => d.on('ready', () => resolve()));
  await d.initialize();
  await ready;
  return d;
}

describe('sandbox persistence', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'sandbox-state-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('link, messages, ledger and pending acks survive a restart of the network', async () => {
    const statePath = path.join(dir, 'a', 'sandbox.json');
    const clock = simulatedClock();
    const net1 = new SandboxNetwork({ clock, statePath });
    net1.link('inst', { phoneNumber: ME });
    const d1 = await readyDriver(net1, 'inst');
    const sent = await d1.sendMessage(`${ALICE}@c.us`, { kind: 'text', body: 'before restart' }, {});
    await d1.sendMessage(`${ALICE}@c.us`, { kind: 'media', media: { mimetype: 'text/plain', data: Buffer.from('bytes on disk').toString('base64') } }, {});
    await d1.destroy();
    net1.close();

    const net2 = new SandboxNetwork({ clock, statePath });
    assert.deepEqual(net2.ledger('inst').map((e) => e.body), ['before restart', '']);
    const d2 = await readyDriver(net2, 'inst');
    assert.equal(d2.info?.wid, `${ME}@c.us`);
    const msgs = await d2.fetchMessages(`${ALICE}@c.us`, { limit: 10 });
    assert.deepEqual(msgs.map((m) => m.id._serialized)[0], sent.id);
    const media = await d2.downloadMedia(msgs[1]?.id._serialized ?? '');
    assert.equal(Buffer.from(media?.data ?? '', 'base64').toString(), 'bytes on disk');

    // the ack timers resume from the message's own time
    const acks: MessageAck[] = [];
    d2.on('message_ack', (m, ack) => {
      if (m.id._serialized === sent.id) acks.push(ack);
    });
    clock.increment(1000);
    assert.deepEqual(acks, [2]);
    clock.increment(4000);
    assert.deepEqual(acks, [2, 3]);
    await d2.destroy();
    net2.close();

    const net3 = new SandboxNetwork({ clock, statePath });
    assert.equal(net3.messages.find(ME, sent.id ?? '')?.ack, 3);
    net3.close();

    // message bodies, media and links are the owner's alone, whatever the folder's mode (they were 0644)
    const files = readdirSync(path.dirname(statePath), { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    assert.ok(files.length >= 4, files.map((f) => f.name).join(', '));
    for (const f of files) assert.equal(statSync(path.join(f.parentPath, f.name)).mode & 0o777, 0o600, f.name);
  });

  test('a torn last journal line (killed mid-append) is ignored; everything before it loads', () => {
    const statePath = path.join(dir, 'b', 'sandbox.json');
    const clock = simulatedClock();
    const net1 = new SandboxNetwork({ clock, statePath });
    net1.link('inst', { phoneNumber: ME });
    net1.record('inst', {
      from: ME, action: 'send', messageId: null, chatId: 'x@c.us', type: 'chat', body: 'kept', media: null,
      location: null, vCards: [], poll: null, targetMessageId: null, options: {}, fault: null,
    });
    net1.close();
    appendFileSync(`${statePath}.ledger.jsonl`, '{"seq":2,"instanceId":"inst","bo');
    const entry = (body: string) => ({
      from: ME, action: 'send' as const, messageId: null, chatId: 'x@c.us', type: 'chat' as const, body, media: null,
      location: null, vCards: [], poll: null, targetMessageId: null, options: {}, fault: null,
    });
    const net2 = new SandboxNetwork({ clock, statePath });
    assert.deepEqual(net2.ledger('inst').map((e) => e.body), ['kept']);
    assert.equal(net2.session('inst').phone, ME);
    net2.record('inst', entry('after the tear'));
    net2.close();
    const net3 = new SandboxNetwork({ clock, statePath });
    assert.deepEqual(net3.ledger('inst').map((e) => [e.seq, e.body]), [[1, 'kept'], [2, 'after the tear']]);
    net3.close();
    // the state file holds the small records only; messages and ledger live in their journals
    const meta = JSON.parse(readFileSync(statePath, 'utf8')) as Record<string, unknown>;
    assert.equal('ledger' in meta, false);
    assert.equal('messages' in meta, false);
  });
});
