/**
 * A deleted instance leaves no link behind on its node (src/drivers/factory.ts forgetInstanceLinks). In the in-process
 * sandbox network (src/sandbox/network.ts forget):
 * found from the outside, every instance ever created kept its session object there (about 1.6 KB each, 5,056
 * after a churn of 5,000 creations and deletions) and a linked one its record in the state file. The network's
 * own accounts, chats and messages stay: they are the network's, not the instance's. A webjs instance's Chromium
 * profile (DATA_DIR/sessions/session-<id>) stayed on disk too; it goes as a logout removes it.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
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

test('a deleted instance\'s Chromium profile on this node goes with it (a webjs link, as a logout removes it); another\'s stays', { skip: SKIP, timeout: 60_000 }, async () => {
  t ??= await startTestGateway({ label: 'sandbox_forget' });
  const gone = (await t.createInstance('forget-profile', { link: false })).instance.id;
  const other = (await t.createInstance('forget-profile-other', { link: false })).instance.id;
  // the profiles as whatsapp-web.js's LocalAuth keeps them (src/drivers/webjs/options.ts sessionPaths)
  const profile = (id: string) => path.join(t!.dataDir, 'sessions', `session-${id}`);
  for (const id of [gone, other]) {
    await mkdir(path.join(profile(id), 'Default'), { recursive: true });
    await writeFile(path.join(profile(id), 'Default', 'Cookies'), 'link');
  }
  assert.equal((await t.admin('DELETE', `/admin/v1/instances/${gone}`)).status, 200);
  assert.equal(existsSync(profile(gone)), false, 'removed before the delete was answered');
  assert.ok(existsSync(path.join(profile(other), 'Default', 'Cookies')));
});
