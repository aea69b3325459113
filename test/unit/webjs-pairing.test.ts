/**
 * The webjs driver's pairing mode against the stand-in Client: a pairing-code request restarts the session
 * with a Client built with `pairWithPhoneNumber` (whatsapp-web.js 1.34 delivers a code reliably only so), the
 * old Client is destroyed quietly, and the new one's events reach the listeners registered before.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simulatedClock } from '../../src/clock.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { StandInClient } from './webjs-standin.js';

const root = mkdtempSync(path.join(tmpdir(), 'webjs-pair-'));
after(() => rmSync(root, { recursive: true, force: true }));

let seq = 0;
function rig(codeWhileStarting: boolean) {
  const clients: StandInClient[] = [];
  const driver = new WebjsDriver({
    instanceId: `pair-${++seq}`,
    dataDir: root,
    callTimeoutMs: 1_000,
    clock: simulatedClock(),
    clientFactory: (options) => {
      const c = new StandInClient(options);
      // the library in pairing mode asks for the code itself while it starts
      if (codeWhileStarting && options.pairWithPhoneNumber) c.initializeWith = async () => void c.emit('code', 'PAIR0001');
      clients.push(c);
      return c;
    },
  });
  const seen: string[] = [];
  driver.on('code', (code) => seen.push(`code ${code}`));
  driver.on('qr', () => seen.push('qr'));
  driver.on('fatal', (reason) => seen.push(`fatal ${reason}`));
  driver.on('ready', () => seen.push('ready'));
  return { driver, clients, seen };
}

test('a pairing code restarts the session in pairing mode; the code it emits while starting is the answer', async () => {
  const r = rig(true);
  await r.driver.initialize();
  r.clients[0]?.emit('qr', 'qr-string');
  assert.equal(await r.driver.requestPairingCode('4915112345678'), 'PAIR0001');
  assert.equal(r.clients.length, 2);
  assert.equal(r.clients[0]?.options.pairWithPhoneNumber, undefined, 'started in QR mode');
  assert.deepEqual(r.clients[1]?.options.pairWithPhoneNumber, { phoneNumber: '4915112345678', showNotification: true });
  assert.deepEqual(r.clients[0]?.callsOf('destroy'), [[]], 'the QR-mode Client is gone');
  assert.deepEqual(r.clients[1]?.callsOf('requestPairingCode'), [], 'no second request: the library asked while starting');
  // the new Client's events reach the listeners of before; the old one's do not
  r.clients[0]?.emit('qr', 'stale');
  r.clients[1]?.emit('ready');
  assert.deepEqual(r.seen, ['qr', 'code PAIR0001', 'ready']);
  await r.driver.destroy();
  assert.deepEqual(r.clients[1]?.callsOf('destroy'), [[]]);
});

test('no code while starting: the pairing-mode Client is asked; refused before a start and once linked', async () => {
  const r = rig(false);
  assert.equal((await r.driver.requestPairingCode('4915112345678').then(() => null, (e: { code?: string }) => e))?.code, 'NOT_CONNECTED');
  await r.driver.initialize();
  assert.equal((await r.driver.requestPairingCode('12').then(() => null, (e: { code?: string }) => e))?.code, 'INVALID_INPUT');
  assert.equal(await r.driver.requestPairingCode('+4915112345678'.slice(1)), 'K7Q2ZP4M');
  assert.deepEqual(r.clients[1]?.callsOf('requestPairingCode'), [['4915112345678', true, undefined]]);
  assert.deepEqual(r.seen, ['code K7Q2ZP4M']);
  r.clients[1]?.emit('ready');
  assert.equal((await r.driver.requestPairingCode('4915112345678').then(() => null, (e: { code?: string }) => e))?.code, 'INVALID_INPUT');
  assert.equal(r.clients.length, 2);
  await r.driver.destroy();
});
