/** src/actors/lifecycle-log.ts: the operator reads link, disconnect, refusal and restart at info; never a QR or a code. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { logLifecycle } from '../../src/actors/lifecycle-log.js';
import type { Logger } from '../../src/log.js';
import type { NotifyParams } from '../../machines/instance.types.js';

test('lifecycle lines carry the reason or the number; a QR, a pairing code and noise are not logged', () => {
  const lines: { fields: Record<string, unknown>; msg: string }[] = [];
  const log = { info: (fields: Record<string, unknown>, msg: string) => void lines.push({ fields, msg }) } as unknown as Logger;
  const events: NotifyParams[] = [
    { event: 'qr', data: { qr: '2@secret-qr-payload' } },
    { event: 'code', data: { code: 'ABCD-EFGH' } },
    { event: 'loading_screen', data: { percent: 50, message: 'loading' } },
    { event: 'ready', data: { phoneNumber: '4915112345678' } },
    { event: 'disconnected', data: { reason: 'NAVIGATION' } },
    { event: 'auth_failure', data: { message: 'refused' } },
    { event: 'instance_restarting', data: { reason: 'BROWSER_DIED', expectedDowntimeMs: 5_000 } },
  ];
  for (const e of events) logLifecycle(log, 'inst-1', e);
  assert.deepEqual(lines, [
    { fields: { instanceId: 'inst-1', phoneNumber: '4915112345678' }, msg: 'instance linked and connected' },
    { fields: { instanceId: 'inst-1', reason: 'NAVIGATION' }, msg: 'instance disconnected' },
    { fields: { instanceId: 'inst-1' }, msg: 'instance link refused by the network (a new QR scan is needed)' },
    { fields: { instanceId: 'inst-1', reason: 'BROWSER_DIED' }, msg: 'instance restarting' },
  ]);
  assert.ok(!JSON.stringify(lines).includes('secret-qr-payload') && !JSON.stringify(lines).includes('ABCD-EFGH'));
});
