/**
 * A deleted instance leaves nothing behind in the in-process sandbox network (src/sandbox/network.ts forget):
 * found from the outside, every instance ever created kept its session object there (about 1.6 KB each, 5,056
 * after a churn of 5,000 creations and deletions) and a linked one its record in the state file. The network's
 * own accounts, chats and messages stay: they are the network's, not the instance's.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { SandboxStore } from '../../src/sandbox/store.js';

const SKIP = !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL)';
let t: TestGateway | undefined;
after(async () => {
  await t?.stop();
});

test('deleting instances, linked or not: their sessions go from the network\'s memory and its state file; another instance\'s stays', { skip: SKIP, timeout: 60_000 }, async () => {
  t = await startTestGateway({ label: 'sandbox_forget' });
  const network = t.gw.sandbox?.network;
  assert.ok(network, 'the in-process sandbox network');
  const linked = (await t.createInstance('forget-linked')).instance.id;
  const unlinked = (await t.createInstance('forget-unlinked', { link: false })).instance.id;
  const kept = (await t.createInstance('forget-kept')).instance.id;
  for (const id of [linked, unlinked, kept]) assert.ok(network.hasSession(id), id);
  const phone = network.state.sessions[linked]?.linkedPhone;
  assert.ok(phone, 'the linked one has its record');

  for (const id of [linked, unlinked]) assert.equal((await t.admin('DELETE', `/admin/v1/instances/${id}`)).status, 200);
  assert.equal(network.hasSession(linked), false);
  assert.equal(network.hasSession(unlinked), false);
  assert.equal(network.state.sessions[linked], undefined);
  assert.ok(network.hasSession(kept) && network.state.sessions[kept]?.linkedPhone, 'another instance is untouched');
  assert.equal(network.state.accounts[phone]?.registered, true, 'the account is the network\'s and stays registered');

  // what a restart of the network reads: the record's removal was journaled at once
  const state = new SandboxStore(path.join(t.dataDir, 'sandbox.json')).load();
  assert.equal(state.sessions[linked], undefined);
  assert.ok(state.sessions[kept]?.linkedPhone);
});
