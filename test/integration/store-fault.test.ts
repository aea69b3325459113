/**
 * PostgreSQL answering and failing a statement for a reason of its own (src/store/health.ts storeFaultOf): a full
 * disk (53100), an I/O error or a file of the database gone (class 58), damaged data. Found from the outside: the
 * embedded database's files removed under a running gateway made every v2 send a 500 INTERNAL_ERROR, which says
 * "a bug" and nothing of the store. Now 503 QUEUE_STORE_UNAVAILABLE with data.reason store_fault (v1: its 503,
 * nothing accepted), PostgreSQL's own error logged for the operator, its message (the server's file names) never
 * in the answer, and nothing accepted. The fault is raised here by a trigger with the server's own SQLSTATE and
 * message, on the real server: a disk cannot be filled under a shared test server.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

const SKIP = !process.env.TEST_DATABASE_URL && 'needs a PostgreSQL server (TEST_DATABASE_URL)';
let t: TestGateway | undefined;
after(async () => {
  await t?.stop();
});

/** Every insert into jobs fails as PostgreSQL fails it with `code` (its message names a file of the server). */
async function faultOnInsert(gw: TestGateway, code: string): Promise<void> {
  await gw.db.pool.query(`CREATE OR REPLACE FUNCTION fault_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION USING ERRCODE = '${code}', MESSAGE = 'could not extend file "base/16384/2619": No space left on device'; END $$`);
  await gw.db.pool.query('CREATE TRIGGER fault_on_insert BEFORE INSERT ON jobs FOR EACH ROW EXECUTE FUNCTION fault_on_insert()');
}

test('a store fault under a send: 503 store_fault on v2 and v1, logged with the store\'s error, nothing accepted; then sends again', { skip: SKIP, timeout: 60_000 }, async () => {
  const lines: string[] = [];
  t = await startTestGateway({ label: 'store_fault', logLines: lines });
  const { apiKey } = await t.createInstance('faulty');
  const count = async () => (await t!.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM jobs')).rows[0]?.n;
  // what an operator's monitoring sees: PostgreSQL answers (mgw_store_up 1), and its faults are counted
  const series = async () => {
    const text = (await t!.admin('GET', '/metrics')).text;
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    return { faults: value('mgw_store_faults_total'), recent: value('mgw_store_fault_recent'), up: value('mgw_store_up') };
  };
  assert.deepEqual(await series(), { faults: 0, recent: 0, up: 1 });
  for (const [code, why] of [['53100', /disk is full/], ['58P01', /could not read or write its files \(58P01\)/], ['XX001', /damaged data/]] as const) {
    await faultOnInsert(t, code);
    const before = await count();
    const v2 = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: `under ${code}` });
    assert.equal(v2.status, 503, v2.text);
    assert.equal(v2.body.code, 'QUEUE_STORE_UNAVAILABLE', v2.text);
    assert.deepEqual(v2.body.data, { queueMode: 'pg', reason: 'store_fault' }, v2.text);
    assert.match(v2.body.error ?? '', why);
    assert.doesNotMatch(v2.text, /base\/16384|No space left/, 'the server\'s message stays in the log');
    const faultLines = () => lines.filter((l) => l.includes('No space left on device'));
    assert.ok(faultLines().length > 0, `the store's own error is logged: ${lines.join('')}`);
    lines.splice(0);
    const v1 = await t.api(apiKey, 'POST', '/api/send-message', { phone: '4915112345678', message: `v1 under ${code}` });
    assert.equal(v1.status, 503, v1.text);
    assert.equal(v1.body.success, false, v1.text);
    assert.equal(await count(), before, 'nothing accepted');
    const logged = faultLines();
    assert.ok(logged.length > 0, `the store's own error is logged under a v1 send too: ${lines.join('')}`);
    assert.ok(logged.every((l) => (JSON.parse(l) as { level: number }).level === 50), 'as an error');
    lines.splice(0);
    await t.db.pool.query('DROP TRIGGER fault_on_insert ON jobs');
  }
  const fixed = await t.api(apiKey, 'POST', '/api/v2/send-message', { phone: '4915112345678', message: 'fixed' });
  assert.equal(fixed.status, 202, fixed.text);
  const seen = await series();
  assert.ok(seen.faults >= 6, `every failed statement counted (a v2 and a v1 send under each of three faults): ${JSON.stringify(seen)}`);
  assert.equal(seen.recent, 1);
  assert.equal(seen.up, 1, 'a SELECT still answers: mgw_store_up alone would say all is well');
  assert.equal((await series()).faults, seen.faults, 'a scrape counts each fault once');
});
