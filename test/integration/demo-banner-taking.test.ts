/**
 * The first start's banner on an empty PostgreSQL database of one node: it names the demo "linked as
 * +4915550100001" (README, quick start), since this node links it. Found from the outside: with DATABASE_URL the
 * start's first round had the demo on its way in (no lease written yet) when the banner was made, and the banner
 * said "not linked: it runs on no node yet" though the next log line said the demo was linked and connected here.
 * And one this node cannot link is told so: the banner waits a few seconds for this node's own demo to link.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway } from '../helpers/gateway.js';
import { DEMO_PHONE } from '../../src/demo.js';
import { freePort } from '../helpers/gateway-process.js';

test('the demo made by a start on an empty database is told linked, on this node', async () => {
  const t = await startTestGateway({ label: 'demo_banner_taking', env: { DEMO_INSTANCE: 'true' } });
  try {
    const demo = t.gw.demo;
    assert.ok(demo, 'a demo was made');
    assert.notEqual(demo.node, null, 'the node that runs it is this one');
    assert.equal(demo.phoneNumber, DEMO_PHONE);
  } finally {
    await t.stop();
  }
});

test('a demo this node cannot link (its sandbox network does not answer) is told not linked yet, with why, not "linked as"', async () => {
  // found by the outside probe: with SANDBOX naming a port nobody listens on, the banner said "linked as +4915550100001"
  const closed = await freePort();
  const t = await startTestGateway({ label: 'demo_banner_unlinked', env: { DEMO_INSTANCE: 'true', SANDBOX: `http://127.0.0.1:${closed}` } });
  try {
    const demo = t.gw.demo;
    assert.ok(demo, 'a demo was made');
    assert.equal(demo.phoneNumber, null);
    assert.match(demo.notLinked ?? '', /sandbox|ECONNREFUSED|initializing|disconnected|error/i, demo.notLinked);
  } finally {
    await t.stop();
  }
});
