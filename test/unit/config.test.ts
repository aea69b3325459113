import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { loadConfig, loadSettings, ConfigError, legacyWaitMs } from '../../src/config.js';

test('defaults: embedded store, sandbox, SPEC.md limits', () => {
  const c = loadConfig({});
  assert.equal(c.PORT, 3000);
  assert.equal(c.DATABASE_URL, undefined);
  assert.equal(c.SANDBOX, 'embedded');
  assert.equal(c.MEDIA_MAX_BYTES, 16 * 1024 * 1024);
  assert.equal(c.MEDIA_BASE64_MAX_BYTES, 7 * 1024 * 1024);
  assert.equal(c.MEDIA_UPLOAD_MAX_BYTES, 64 * 1024 * 1024);
  assert.equal(c.QUEUE_MAX_PENDING, 5000);
  assert.equal(c.INTERACTION_RATE_POINTS, 60);
  assert.equal(c.LEGACY_SYNC_TIMEOUT_MS, 20_000);
  assert.equal(c.ORDERED_RESTART_HARD_MS, 120_000);
  assert.equal(c.STOP_TIMEOUT_MS, 30_000);
});

test('numbers and booleans are read from strings', () => {
  const c = loadConfig({ PORT: '8080', QUEUE_MAX_PENDING: '10', DEMO_INSTANCE: 'false', WEBHOOK_ALLOW_PRIVATE: 'yes' });
  assert.equal(c.PORT, 8080);
  assert.equal(c.QUEUE_MAX_PENDING, 10);
  assert.equal(c.DEMO_INSTANCE, false);
  assert.equal(c.WEBHOOK_ALLOW_PRIVATE, true);
});

test('paths are absolute after load: DATA_DIR (default ./data) and CHROME_PATH against the working directory', () => {
  const cwd = process.cwd();
  assert.equal(loadConfig({}).DATA_DIR, path.join(cwd, 'data'));
  assert.equal(loadConfig({ DATA_DIR: './var/mgw' }).DATA_DIR, path.join(cwd, 'var/mgw'));
  assert.equal(loadConfig({ DATA_DIR: '/srv/mgw/' }).DATA_DIR, '/srv/mgw');
  assert.equal(loadConfig({ CHROME_PATH: 'bin/chromium' }).CHROME_PATH, path.join(cwd, 'bin/chromium'));
  assert.equal(loadConfig({}).CHROME_PATH, '/usr/bin/chromium');
  for (const v of ['embedded', 'off', 'http://127.0.0.1:3100', 'https://sandbox.example', 'http://127.0.0.1:3100/']) assert.equal(loadConfig({ SANDBOX: v }).SANDBOX, v);
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/mgw' }).DATABASE_URL, 'postgres://u:p@db:5432/mgw');
  assert.equal(loadConfig({ DATABASE_URL: 'postgresql:///mgw?host=/var/run/postgresql' }).DATABASE_URL, 'postgresql:///mgw?host=/var/run/postgresql');
});

/** Every variable with a bad value → the exact message: the variable, then what it accepts. */
const BAD: [variable: string, value: string, message: string][] = [
  ['PORT', 'eighty', 'PORT must be an integer from 0 to 65535'],
  ['PORT', '70000', 'PORT must be an integer from 0 to 65535'],
  ['PORT', '-1', 'PORT must be an integer from 0 to 65535'],
  ['PORT', '80.5', 'PORT must be an integer from 0 to 65535'],
  ['HOST', '   ', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  // found from the outside: passed as text and failed at the bind, exit 1, echoed, the data directory initialized
  ['HOST', 'bad host', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', 'not_a_host!', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', '127.0.0.1/evil?', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', '[::1]', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', '-lead.example', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', `${'a'.repeat(64)}.example`, 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['HOST', '999.1.1.1', 'HOST must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)'],
  ['DATABASE_URL', 'mysql://root:hunter2secret@db/mgw', 'DATABASE_URL must be a postgres:// or postgresql:// URL'],
  ['DATABASE_URL', 'db.internal:5432', 'DATABASE_URL must be a postgres:// or postgresql:// URL'],
  ['DATABASE_URL', 'not a url hunter2secret', 'DATABASE_URL must be a postgres:// or postgresql:// URL (postgres://user:password@host:5432/database)'],
  ['DATABASE_URL', 'postgres:///mgw', 'DATABASE_URL must name a host (postgres://user:password@host:5432/database)'],
  ['DATA_DIR', '  ', 'DATA_DIR must be a directory path'],
  ['ADMIN_TOKEN', 'hunter2', 'ADMIN_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  ['ADMIN_TOKEN', 'hunter2 hunter2 hunter2', 'ADMIN_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  // accepted once, and then every request with it was 401 "header missing or malformed"
  ['ADMIN_TOKEN', 'Adm!n#hunter2@probe:2026', 'ADMIN_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  ['LOG_LEVEL', 'chatty', 'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal'],
  ['LOG_LEVEL', 'INFO', 'LOG_LEVEL must be one of trace, debug, info, warn, error, fatal'],
  ['CHROME_PATH', ' ', 'CHROME_PATH must be the path of the Chromium executable'],
  ['SANDBOX', 'maybe', 'SANDBOX must be embedded, off, or the http(s) URL of a `mgw sandbox` process (scheme, host and port: no path, query or user)'],
  ['SANDBOX', 'ftp://sandbox', 'SANDBOX must be embedded, off, or the http(s) URL of a `mgw sandbox` process (scheme, host and port: no path, query or user)'],
  ['SANDBOX', 'http://127.0.0.1:3100/some/path', 'SANDBOX must be embedded, off, or the http(s) URL of a `mgw sandbox` process (scheme, host and port: no path, query or user)'],
  ['SANDBOX', 'http://u:p@127.0.0.1:3100', 'SANDBOX must be embedded, off, or the http(s) URL of a `mgw sandbox` process (scheme, host and port: no path, query or user)'],
  ['DEMO_INSTANCE', 'maybe', 'DEMO_INSTANCE must be true or false (also 1/0, yes/no, on/off)'],
  ['WEBHOOK_ALLOW_PRIVATE', '2', 'WEBHOOK_ALLOW_PRIVATE must be true or false (also 1/0, yes/no, on/off)'],
  ['MEDIA_MAX_BYTES', '0', 'MEDIA_MAX_BYTES must be an integer of at least 1'],
  ['MEDIA_BASE64_MAX_BYTES', '7MB', 'MEDIA_BASE64_MAX_BYTES must be an integer of at least 1'],
  ['MEDIA_UPLOAD_MAX_BYTES', '-5', 'MEDIA_UPLOAD_MAX_BYTES must be an integer of at least 1'],
  ['MEDIA_RETENTION_HOURS', '0', 'MEDIA_RETENTION_HOURS must be an integer from 1 to 876000'],
  // a stored file's expiry past any date PostgreSQL takes: every upload was 500 INTERNAL_ERROR (found from the outside)
  ['MEDIA_RETENTION_HOURS', '9999999999', 'MEDIA_RETENTION_HOURS must be an integer from 1 to 876000'],
  ['MEDIA_STORE_MAX_MB', 'lots', 'MEDIA_STORE_MAX_MB must be an integer of at least 1'],
  ['QUEUE_MAX_PENDING', '-3', 'QUEUE_MAX_PENDING must be an integer of at least 1'],
  ['FETCH_MESSAGES_MAX', '10001', 'FETCH_MESSAGES_MAX must be an integer from 1 to 10000'],
  ['INTERACTION_RATE_POINTS', '0', 'INTERACTION_RATE_POINTS must be an integer of at least 1'],
  ['LEGACY_SYNC_TIMEOUT_MS', '-1', 'LEGACY_SYNC_TIMEOUT_MS must be an integer from 0 to 86400000'],
  ['LEGACY_CALLER_TIMEOUT_MS', '5000', 'LEGACY_CALLER_TIMEOUT_MS must be an integer from 5001 to 86400000'],
  ['ORDERED_RESTART_HARD_MS', '999', 'ORDERED_RESTART_HARD_MS must be an integer from 1000 to 86400000'],
  ['DRIVER_CALL_TIMEOUT_MS', '1e4', 'DRIVER_CALL_TIMEOUT_MS must be an integer from 100 to 86400000'],
  // past node's longest timer (2^31 - 1 ms) a timer fires after 1 ms: every call would time out at once
  ['DRIVER_CALL_TIMEOUT_MS', '99999999999', 'DRIVER_CALL_TIMEOUT_MS must be an integer from 100 to 86400000'],
  ['LEGACY_SYNC_TIMEOUT_MS', '2147483648', 'LEGACY_SYNC_TIMEOUT_MS must be an integer from 0 to 86400000'],
  ['LEGACY_CALLER_TIMEOUT_MS', '86400001', 'LEGACY_CALLER_TIMEOUT_MS must be an integer from 5001 to 86400000'],
  ['ORDERED_RESTART_HARD_MS', '99999999999', 'ORDERED_RESTART_HARD_MS must be an integer from 1000 to 86400000'],
  ['STOP_TIMEOUT_MS', '999', 'STOP_TIMEOUT_MS must be an integer from 1000 to 2147483647'],
  // above node's longest timer setTimeout fires after 1 ms: a SIGTERM was a hard stop at once (exit 1, found from the outside)
  ['STOP_TIMEOUT_MS', '2147483648', 'STOP_TIMEOUT_MS must be an integer from 1000 to 2147483647'],
  ['NODE_ID', 'node one', 'NODE_ID must be 1 to 64 characters of A-Z a-z 0-9 . _ : -'],
  ['NODE_URL', 'ftp://node', 'NODE_URL must be the http(s) URL of this node as the other nodes reach it'],
  ['CLUSTER_SECRET', 'short', 'CLUSTER_SECRET must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  ['CLUSTER_SECRET', 'cluster!hunter2#secret', 'CLUSTER_SECRET must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  ['NODE_CAPACITY', '0', 'NODE_CAPACITY must be an integer from 1 to 100000'],
  ['LEASE_TTL_MS', '1000', 'LEASE_TTL_MS must be an integer from 2000 to 120000'],
  ['WEBJS_AUTH', 'remote', 'WEBJS_AUTH must be local or postgres'],
  ['WEBJS_CHROME_ARGS', '--lang=de proxy-server=x', 'WEBJS_CHROME_ARGS must be Chromium switches separated by spaces, each starting with --'],
  ['WEBJS_BLOCK_RESOURCES', 'image,stylesheet', 'WEBJS_BLOCK_RESOURCES must be none or a comma-separated list of image, media, font'],
  ['METRICS_TOKEN', 'hunter2-short', 'METRICS_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
  ['METRICS_TOKEN', 'hunter2 hunter2 hunter2', 'METRICS_TOKEN must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)'],
];

/**
 * Blanks around a number or a boolean (`PORT=" 3455"`, a quoted line of an env file) are refused like any other
 * malformed value, for every such variable alike, with the reason said; the value without them is taken.
 */
test('a number or a boolean with blanks around it is refused, whichever variable it is', async () => {
  const { ConfigSchema } = await import('../../src/config.js');
  const good: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.schema)) {
    const reading = loadConfig({})[key as keyof ReturnType<typeof loadConfig>];
    if (typeof reading === 'number') good[key] = String(key === 'PORT' ? 3455 : reading);
    if (typeof reading === 'boolean') good[key] = String(reading);
  }
  assert.ok(Object.keys(good).length >= 15, Object.keys(good).join(' '));
  for (const [variable, value] of Object.entries(good)) {
    assert.doesNotThrow(() => loadConfig({ [variable]: value }), `${variable}=${value}`);
    for (const blanked of [` ${value}`, `${value} `, `\t${value}\n`]) {
      assert.throws(() => loadConfig({ [variable]: blanked }), (err: unknown) => {
        assert.ok(err instanceof ConfigError, `${variable}=${JSON.stringify(blanked)}`);
        assert.equal(err.variable, variable);
        assert.match(err.message, new RegExp(`^invalid configuration: ${variable} must be .*, without blanks around it$`), JSON.stringify(blanked));
        return true;
      });
    }
  }
  assert.throws(() => loadConfig({ PORT: ' 3455' }), { message: 'invalid configuration: PORT must be an integer from 0 to 65535, without blanks around it' });
  assert.throws(() => loadConfig({ DEMO_INSTANCE: 'yes ' }), { message: 'invalid configuration: DEMO_INSTANCE must be true or false (also 1/0, yes/no, on/off), without blanks around it' });
});

test('paths, URLs and host names with blanks around them are refused too, the variable named (found from the outside: DATA_DIR=" /x" made a directory named by a blank)', () => {
  for (const [variable, value] of [
    ['DATA_DIR', ' /srv/mgw'],
    ['DATA_DIR', '/srv/mgw '],
    ['CHROME_PATH', '/usr/bin/chromium '],
    ['DATABASE_URL', 'postgres://u@db:5432/mgw '],
    ['DATABASE_URL', ' postgres://u@db:5432/mgw'],
    ['HOST', ' 10.1.2.3'],
    ['NODE_URL', 'http://10.0.0.5:3000 '],
    ['SANDBOX', ' http://127.0.0.1:4000'],
  ] as const) {
    assert.throws(() => loadConfig({ [variable]: value }), (err: unknown) => {
      assert.ok(err instanceof ConfigError, `${variable}=${JSON.stringify(value)}`);
      assert.equal(err.variable, variable);
      assert.match(err.message, new RegExp(`^invalid configuration: ${variable} must be .*, without blanks around it$`), JSON.stringify(value));
      assert.ok(!err.message.includes(value.trim()), 'the value is not echoed');
      return true;
    });
  }
  // the same without the blanks are taken
  assert.equal(loadConfig({ DATA_DIR: '/srv/mgw' }).DATA_DIR, '/srv/mgw');
  assert.equal(loadConfig({ DATABASE_URL: 'postgres://u@db:5432/mgw' }).DATABASE_URL, 'postgres://u@db:5432/mgw');
});

test('HOST: an IP address or a host name as RFC 1123 spells one', () => {
  for (const host of ['127.0.0.1', '0.0.0.0', '::', '::1', 'fe80::1%eth0', 'localhost', 'gw-1.internal.example', 'node7.', '3com.example', `${'a'.repeat(63)}.example`]) {
    assert.equal(loadConfig({ HOST: host }).HOST, host);
  }
});

test('a bad value of any variable: the variable, what it accepts, never the value', () => {
  for (const [variable, value, message] of BAD) {
    assert.throws(() => loadConfig({ [variable]: value }), (err: unknown) => {
      assert.ok(err instanceof ConfigError, `${variable}=${value}`);
      assert.equal(err.variable, variable);
      assert.equal(err.message, `invalid configuration: ${message}`);
      if (value.trim().length >= 3) assert.ok(!err.message.includes(value), `${variable}: the value is not echoed`);
      assert.ok(!err.message.includes('hunter2'), 'no secret in the message');
      return true;
    });
  }
});

test('loadSettings: a few variables read as loadConfig reads them, the others not read at all (what mgw reads)', () => {
  const cwd = process.cwd();
  // every bad value of those variables is refused with loadConfig's own error, the reason apart from the variable
  for (const [variable, value, message] of BAD.filter(([v]) => ['PORT', 'DATA_DIR', 'ADMIN_TOKEN'].includes(v))) {
    assert.throws(() => loadSettings(['PORT', 'DATA_DIR', 'ADMIN_TOKEN'], { [variable]: value }), (err: unknown) => {
      assert.ok(err instanceof ConfigError, `${variable}=${value}`);
      assert.equal(err.message, `invalid configuration: ${message}`);
      assert.equal(`${err.variable} ${err.reason}`, message);
      return true;
    });
  }
  // the same defaults (an empty value is unset), and a bad variable not asked for is not read
  const env = { PORT: '', LOG_LEVEL: 'chatty', SANDBOX: 'maybe', DATA_DIR: 'var/mgw' };
  const s = loadSettings(['PORT', 'DATA_DIR', 'ADMIN_TOKEN'], env);
  assert.deepEqual([s.PORT, s.DATA_DIR, s.ADMIN_TOKEN], [3000, path.join(cwd, 'var/mgw'), undefined]);
  assert.equal(loadSettings(['PORT'], { PORT: '0080' }).PORT, 80);
});

test('every variable of the schema has a bad-value case above', async () => {
  const { ConfigSchema } = await import('../../src/config.js');
  const covered = new Set(BAD.map(([v]) => v));
  assert.deepEqual(Object.keys(ConfigSchema.schema).filter((k) => !covered.has(k)), []);
});

test('the v1 wait is capped at LEGACY_CALLER_TIMEOUT_MS minus 5 s', () => {
  assert.equal(legacyWaitMs(loadConfig({})), 20_000);
  assert.equal(legacyWaitMs(loadConfig({ LEGACY_SYNC_TIMEOUT_MS: '60000' })), 25_000);
  assert.equal(legacyWaitMs(loadConfig({ LEGACY_SYNC_TIMEOUT_MS: '60000', LEGACY_CALLER_TIMEOUT_MS: '40000' })), 35_000);
});
