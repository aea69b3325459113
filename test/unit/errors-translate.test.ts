/**
 * The one code → status table (src/errors.ts) against the gateway's API guide (docs/api.md "Errors"), and the
 * one translation (src/http/translate.ts) of what a route may throw to the v2 envelope's error and to v1's
 * frozen answers; driverErrorToDomain for every DriverError code.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { StructError, assert as check, object, string } from 'superstruct';
import { DomainError, ERROR_STATUS, type ErrorCode } from '../../src/errors.js';
import { translate, toV1SendError, toV1ReadError, toV1GuardError } from '../../src/http/translate.js';
import { COMMIT_UNKNOWN, NOT_CONNECTED, STORE_LOST, V1Error } from '../../src/http/errors.js';
import { DriverError } from '../../src/drivers/contract.js';
import { driverErrorToDomain } from '../../src/drivers/domain-errors.js';
import { CommitOutcomeUnknown, raisedByStore } from '../../src/store/pool.js';
import { failureReply } from '../../src/actors/port.js';
import { StoreFault } from '../../src/store/health.js';
import type { Logger } from '../../src/log.js';

/** `| 404 | \`JOB_NOT_FOUND\` |` and `| 404 | \`A\`, \`B\` |` rows of the guide's error table. */
function documentedStatuses(): Map<string, number> {
  const md = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  const section = md.slice(md.indexOf('\n## Errors'));
  const rows = new Map<string, number>();
  for (const line of section.split('\n')) {
    const m = /^\| (\d{3}) \| ([^|]+) \|/.exec(line);
    if (!m) continue;
    for (const c of m[2]!.matchAll(/`([A-Z_]+)`/g)) rows.set(c[1]!, Number(m[1]));
  }
  return rows;
}

test('every code has the status the API guide documents, and every documented code is a code', () => {
  const documented = documentedStatuses();
  assert.ok(documented.size >= 30, `the guide's table was read (${documented.size} codes)`);
  for (const [code, status] of documented) assert.equal(ERROR_STATUS[code as ErrorCode], status, code);
  for (const code of Object.keys(ERROR_STATUS)) assert.ok(documented.has(code), `${code} is documented`);
  assert.equal(new DomainError('QUEUE_FULL', 'x').status, 422);
});

const structError = (): StructError => {
  try {
    check({ a: 1 }, object({ a: string() }));
  } catch (err) {
    if (err instanceof StructError) return err;
  }
  throw new Error('no StructError');
};
/** what pg throws when the server's statement_timeout cancels a statement (as the store's pool marks it) */
const pgTimedOut = () => raisedByStore(Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014', severity: 'ERROR' }));
const pgGone = () => raisedByStore(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));

test('translate: each kind of thrown thing → the code it answers as', () => {
  const cases: [unknown, ErrorCode, number][] = [
    [new DomainError('NOT_A_GROUP', 'x'), 'NOT_A_GROUP', 400],
    [structError(), 'VALIDATION_FAILED', 400],
    [pgGone(), 'QUEUE_STORE_UNAVAILABLE', 503],
    [new CommitOutcomeUnknown(new Error('reset')), 'INSTANCE_TIMEOUT', 504],
    [pgTimedOut(), 'QUEUE_STORE_UNAVAILABLE', 503],
    [new DriverError('gone', 'CALL_FAILED', false), 'WA_CALL_FAILED', 500],
    [Object.assign(new Error('too big'), { status: 413, expose: true }), 'PAYLOAD_TOO_LARGE', 413],
    [Object.assign(new Error('hidden'), { status: 413, expose: false }), 'INTERNAL_ERROR', 500],
    [new Error('boom'), 'INTERNAL_ERROR', 500],
    [undefined, 'INTERNAL_ERROR', 500],
  ];
  for (const [raw, code, status] of cases) {
    const err = translate(raw);
    assert.deepEqual([err.code, err.status], [code, status], String(raw));
  }
  assert.equal(translate(structError()).data.field, 'a');
  assert.deepEqual(translate(pgTimedOut()).data, { queueMode: 'pg', reason: 'store_timeout' });
  assert.equal(translate(new Error('secret detail')).message, 'internal error');
});

test('PostgreSQL failing a statement for a reason of its own is the store\'s fault (503 store_fault, a probe), only when the store raised it', () => {
  const pg = (code: string, severity = 'ERROR') => Object.assign(new Error('could not open file "base/5/16493": No such file or directory'), { code, severity });
  let probes = 0;
  for (const code of ['53100', '53200', '53400', '58P01', '58030', 'XX001', 'XX002']) {
    const err = translate(raisedByStore(pg(code)), { onStoreError: () => probes++ });
    assert.deepEqual([err.code, err.status, err.data], ['QUEUE_STORE_UNAVAILABLE', 503, { queueMode: 'pg', reason: 'store_fault' }], code);
    assert.doesNotMatch(err.message, /base\/5/, 'the server\'s own message is not answered');
  }
  assert.equal(probes, 7);
  // the same codes from elsewhere, a bad statement's error, an internal error of the server: not a fault of the store
  for (const raw of [pg('53100'), raisedByStore(pg('42P01')), raisedByStore(pg('XX000')), raisedByStore(pg('23505'))]) {
    assert.equal(translate(raw).code, 'INTERNAL_ERROR', String((raw as { code: string }).code));
  }
});

test('v1: a store fault seen first by the route is logged at error with PostgreSQL\'s own error (as v2\'s boundary logs it); an actor\'s, already logged, is not again', () => {
  const logged: { obj: Record<string, unknown>; msg: string }[] = [];
  const log = { error: (obj: Record<string, unknown>, msg: string) => logged.push({ obj, msg }) } as unknown as Logger;
  const at = { log, method: 'POST', path: '/api/send-media' };
  const raw = raisedByStore(Object.assign(new Error('could not extend file "base/5/16493": No space left on device'), { code: '53100', severity: 'ERROR' }));
  const e = toV1SendError(raw, at);
  assert.deepEqual([e.status, e.body], [503, { success: false, error: STORE_LOST }]);
  assert.equal(logged.length, 1);
  assert.equal(logged[0]?.msg, 'PostgreSQL failed a statement for a reason of its own');
  assert.equal(logged[0]?.obj.err, raw);
  assert.deepEqual([logged[0]?.obj.method, logged[0]?.obj.path], ['POST', '/api/send-media']);
  // an actor's reply (StoreFault): the actor logged PostgreSQL's error where it happened
  toV1SendError(new StoreFault('PostgreSQL\'s disk is full'), at);
  // the store unreachable: not a fault of the store's own
  toV1SendError(pgGone(), at);
  assert.equal(logged.length, 1);
});

test('a driver error whose text names a socket error is the network\'s failure, never the store\'s (no probe, no QUEUE_STORE_UNAVAILABLE)', () => {
  // webjs passes Chromium's protocol errors on with their text, e.g. a DevTools socket reset
  const driverErr = () => new DriverError('Protocol error (Runtime.callFunctionOn): read ECONNRESET', 'CALL_FAILED', false);
  let probes = 0;
  const err = translate(driverErr(), { onStoreError: () => probes++ });
  assert.deepEqual([err.code, err.status, probes], ['WA_CALL_FAILED', 500, 0]);
  const refused = translate(new DriverError('connect ECONNREFUSED 127.0.0.1:9222', 'SESSION_CLOSED', true), { onStoreError: () => probes++ });
  assert.deepEqual([refused.code, probes], ['INSTANCE_OFFLINE', 0]);
  // an actor's reply of the same error (the port's conversion) says the same
  const reply = failureReply(driverErr(), () => undefined);
  assert.equal(reply.ok, false);
  assert.equal(!reply.ok && reply.error.code, 'WA_CALL_FAILED');
});

test('translate: a store failure probes the store', () => {
  let probes = 0;
  translate(pgGone(), { onStoreError: () => probes++ });
  translate(new CommitOutcomeUnknown(new Error('reset')), { onStoreError: () => probes++ });
  translate(pgTimedOut(), { onStoreError: () => probes++ });
  translate(new Error('other'), { onStoreError: () => probes++ });
  assert.equal(probes, 3);
});

test('v1: send failures in the frozen shapes, reads keep the status, the guard maps only the store', () => {
  const at = { method: 'POST', path: '/api/send-message' };
  const v1 = (raw: unknown) => {
    const e = toV1SendError(raw, at);
    return [e.status, e.body];
  };
  assert.deepEqual(v1(new DomainError('INSTANCE_OFFLINE', 'x')), [503, { success: false, error: NOT_CONNECTED }]);
  assert.deepEqual(v1(new DomainError('INSTANCE_UNREACHABLE', 'x')), [503, { success: false, error: NOT_CONNECTED }]);
  assert.deepEqual(v1(pgGone()), [503, { success: false, error: STORE_LOST }]);
  assert.deepEqual(v1(new CommitOutcomeUnknown(new Error('reset'))), [500, { success: false, error: COMMIT_UNKNOWN }]);
  assert.equal(v1(new DomainError('INSTANCE_TIMEOUT', 'x'))[0], 500);
  assert.deepEqual(v1(structError()), [500, { success: false, error: translate(structError()).message }]);
  assert.deepEqual(v1(new Error('boom')), [500, { success: false, error: 'internal error' }]);
  const own = new V1Error(400, 'phone is required');
  assert.equal(toV1SendError(own, at), own);

  const read = toV1ReadError(new DomainError('INSTANCE_OFFLINE', 'instance is not connected'));
  assert.ok(read instanceof V1Error);
  assert.deepEqual([read.status, read.body], [503, { success: false, error: 'instance is not connected' }]);
  const guard = toV1GuardError(new DomainError('QUEUE_STORE_UNAVAILABLE', 'cannot verify'));
  assert.ok(guard instanceof V1Error && guard.status === 503);
  const unauthorized = new DomainError('UNAUTHORIZED', 'no key');
  assert.equal(toV1GuardError(unauthorized), unauthorized);
});

test('driverErrorToDomain: every DriverError code', () => {
  const map = (code: DriverError['code']) => driverErrorToDomain(new DriverError('why', code, false), 'op', { status: 'connected' });
  assert.equal(map('NOT_CONNECTED').code, 'INSTANCE_OFFLINE');
  assert.deepEqual(map('SESSION_CLOSED').data, { instance: { status: 'connected', detail: 'why' } });
  assert.equal(map('NOT_A_GROUP').code, 'NOT_A_GROUP');
  assert.deepEqual([map('INVALID_INPUT').code, map('INVALID_INPUT').data], ['VALIDATION_FAILED', { field: 'body' }]);
  assert.equal(map('TIMEOUT').code, 'INSTANCE_TIMEOUT');
  for (const c of ['NOT_REGISTERED', 'NOT_FOUND', 'CALL_FAILED'] as const) {
    assert.deepEqual([map(c).code, map(c).message], ['WA_CALL_FAILED', 'op: why'], c);
  }
});
