/**
 * Configuration: the environment, read once through one superstruct schema. A bad value stops the start
 * with an error that names the variable and says what is allowed (never its value: it may be a secret).
 * Paths are made absolute here, against the working directory of the start: nothing downstream ever sees
 * a relative path (a relative socket directory is taken for a host name by `pg`).
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { coerce, create, define, defaulted, object, optional, string, StructError, type Infer, type Struct } from 'superstruct';
import { LONGEST_TIMER_MS } from './clock.js';

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const;
type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Whether a number's or a boolean's value has blanks around it (`PORT=" 3455"`, a quoted line of an env file).
 * Such a value is refused for every number and boolean alike, as a blank inside one is and as the other
 * variables (a token, a URL, a node id) refuse blanks: one rule for what a value is, with the reason said in
 * the message rather than a value silently trimmed into another.
 */
const blanked = (v: unknown): v is string => typeof v === 'string' && v !== v.trim();
const WITHOUT_BLANKS = ', without blanks around it';

/** An integer variable in [lo, hi]; the message states the range. */
const int = (lo: number, hi = Number.MAX_SAFE_INTEGER): Struct<number, null> => {
  const range = hi === Number.MAX_SAFE_INTEGER ? `an integer of at least ${lo}` : `an integer from ${lo} to ${hi}`;
  const checked = define<number>('integer', (v) => {
    if (blanked(v)) return `must be ${range}${WITHOUT_BLANKS}`;
    return (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi) || `must be ${range}`;
  });
  // a blanked value stays a string, for the check to say why it is refused
  return coerce(checked, string(), (v) => (blanked(v) ? v : /^-?\d+$/.test(v) ? Number(v) : NaN));
};

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];
const BOOLEAN_RULE = 'must be true or false (also 1/0, yes/no, on/off)';
const bool: Struct<boolean, null> = coerce(
  define<boolean>('boolean', (v) => typeof v === 'boolean' || (blanked(v) ? `${BOOLEAN_RULE}${WITHOUT_BLANKS}` : BOOLEAN_RULE)),
  string(),
  (v) => {
    const s = v.toLowerCase();
    return TRUE.includes(s) ? true : FALSE.includes(s) ? false : v;
  },
);

/**
 * Text, paths and URLs refuse blanks around them too (found from the outside: DATA_DIR=" /srv/mgw" made a
 * directory named by a blank under the working directory, and a DATABASE_URL with a trailing blank failed the start
 * on a database "mgw " that nobody named).
 */
const unblanked = (v: unknown, what: string, rule: (v: string) => boolean): true | string => {
  if (typeof v !== 'string') return `must be ${what}`;
  if (blanked(v) && v.trim().length > 0) return `must be ${what}${WITHOUT_BLANKS}`;
  return rule(v) || `must be ${what}`;
};

const text = (what: string) => define<string>('string', (v) => unblanked(v, what, (s) => s.trim().length > 0));

/** A filesystem path, made absolute against the working directory (a blanked one is left for `text` to refuse). */
const fsPath = (what: string): Struct<string, null> =>
  coerce(text(what), string(), (v) => (v.trim().length > 0 && !blanked(v) ? path.resolve(v) : v));

const logLevel = define<LogLevel>('enums', (v) => (LOG_LEVELS as readonly unknown[]).includes(v) || `must be one of ${LOG_LEVELS.join(', ')}`);

const sandbox = define<string>('sandbox', (v) => {
  if (v === 'embedded' || v === 'off') return true;
  // a `mgw sandbox` serves its routes at its root: found from the outside, a URL with a path was taken as a prefix
  // of every route, and each instance then backed off for ever on 404 without the start saying a word
  return unblanked(v, 'embedded, off, or the http(s) URL of a `mgw sandbox` process (scheme, host and port: no path, query or user)', isSandboxUrl);
});

const WEBJS_AUTH_MODES = ['local', 'postgres'] as const;
const webjsAuth = define<(typeof WEBJS_AUTH_MODES)[number]>('webjs auth', (v) => (WEBJS_AUTH_MODES as readonly unknown[]).includes(v) || 'must be local or postgres');

/** Resource types a webjs page may be kept from loading (WEBJS_BLOCK_RESOURCES). */
export const WEBJS_BLOCKABLE = ['image', 'media', 'font'] as const;
export type WebjsBlockable = (typeof WEBJS_BLOCKABLE)[number];
const blockList: Struct<WebjsBlockable[], null> = coerce(
  define<WebjsBlockable[]>('resource types', (v) => (Array.isArray(v) && v.every((x) => (WEBJS_BLOCKABLE as readonly unknown[]).includes(x))) || `must be none or a comma-separated list of ${WEBJS_BLOCKABLE.join(', ')}`),
  string(),
  (v) => (v.trim() === 'none' ? [] : [...new Set(v.split(',').map((s) => s.trim()).filter(Boolean))]),
);
const chromeSwitches: Struct<string[], null> = coerce(
  define<string[]>('switches', (v) => (Array.isArray(v) && v.every((a) => typeof a === 'string' && /^--[A-Za-z0-9]/.test(a))) || 'must be Chromium switches separated by spaces, each starting with --'),
  string(),
  (v) => v.trim().split(/\s+/).filter(Boolean),
);

const databaseUrl = define<string>('postgres URL', (v) => {
  if (typeof v !== 'string') return 'must be a postgres:// or postgresql:// URL';
  if (blanked(v)) return `must be a postgres:// or postgresql:// URL${WITHOUT_BLANKS}`;
  try {
    const u = new URL(v);
    if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') return 'must be a postgres:// or postgresql:// URL';
    return u.hostname !== '' || new URLSearchParams(u.search).has('host') || 'must name a host (postgres://user:password@host:5432/database)';
  } catch {
    return 'must be a postgres:// or postgresql:// URL (postgres://user:password@host:5432/database)';
  }
});

/**
 * HOST: an IP address (IPv4, IPv6 without brackets) or a host name as RFC 1123 spells one (labels of letters,
 * digits and inner `-`, at most 63 characters each, 253 in all, a final dot allowed). Found from the outside:
 * HOST='bad host' passed as text, initialized the data directory (embedded PostgreSQL, the admin token, the demo
 * instance) and failed only at the bind, with exit 1 and the value in the message. A well-formed name that
 * resolves to no address of this machine still fails at the bind (src/run-main.ts startFailure).
 */
const HOST_LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?';
const HOST_NAME = new RegExp(`^(?=.{1,253}\\.?$)${HOST_LABEL}(?:\\.${HOST_LABEL})*\\.?$`);
const HOST_RULE = 'a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost)';
// a name of digits and dots alone is meant as an IPv4 address (RFC 1123 2.1: a name's top label is not all digits):
// 999.1.1.1 is none, and passed as a name to fail only at the bind (found from the outside)
const looksNumeric = (s: string) => /^[\d.]+$/.test(s);
/** Whether `s` is a HOST as the rule above spells one (also `mgw sandbox --host`). */
export const isHostSpelling = (s: string): boolean => isIP(s) !== 0 || (HOST_NAME.test(s) && !looksNumeric(s));
const host = define<string>('host', (v) => unblanked(v, HOST_RULE, isHostSpelling));

const nodeId = define<string>('node id', (v) => (typeof v === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(v)) || 'must be 1 to 64 characters of A-Z a-z 0-9 . _ : -');
const httpUrl = define<string>('url', (v) => unblanked(v, 'the http(s) URL of this node as the other nodes reach it', isHttpUrl));

/**
 * A token sent as `Authorization: Bearer <token>` (the admin token, the cluster secret, the metrics token): long
 * enough not to be guessed, and only the characters of a bearer token (RFC 6750's b64token, which
 * src/http/auth.ts reads). ADMIN_TOKEN='Adm!n#T0ken@x:2026' started the gateway and could then never be used:
 * every request with it was 401 "header missing or malformed".
 */
export const BEARER_TOKEN_RULE = /^[A-Za-z0-9._~+/=-]{16,512}$/;
export const BEARER_TOKEN_TEXT = 'must be 16 to 512 characters of A-Z a-z 0-9 . _ ~ + / = - (what a bearer token may hold)';
const bearerToken = (what: string) => define<string>(what, (v) => (typeof v === 'string' && BEARER_TOKEN_RULE.test(v)) || BEARER_TOKEN_TEXT);
const adminToken = bearerToken('token');
const clusterSecret = bearerToken('secret');
const metricsToken = bearerToken('token');

function isSandboxUrl(v: string): boolean {
  if (!isHttpUrl(v)) return false;
  const u = new URL(v);
  return u.pathname === '/' && u.search === '' && u.hash === '' && u.username === '' && u.password === '';
}

function isHttpUrl(v: string): boolean {
  try {
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * The longest a duration setting that arms a timer may be: a day. node's timers take at most 2^31 - 1 ms (24.8
 * days); past that setTimeout fires after 1 ms instead, so a DRIVER_CALL_TIMEOUT_MS of 99999999999 made every call
 * time out at once, and the deadlines built on it (a call plus a grace) must stay below that too.
 */
const DAY_MS = 86_400_000;

export const ConfigSchema = object({
  PORT: defaulted(int(0, 65535), 3000),
  HOST: defaulted(host, '127.0.0.1'),
  DATABASE_URL: optional(databaseUrl),
  DATA_DIR: defaulted(fsPath('a directory path'), path.resolve('data')),
  ADMIN_TOKEN: optional(adminToken),
  LOG_LEVEL: defaulted(logLevel, 'info'),
  CHROME_PATH: defaulted(fsPath('the path of the Chromium executable'), '/usr/bin/chromium'),
  /** where a webjs session's link is kept: its Chromium profile (local) or PostgreSQL (RemoteAuth; any node resumes it) */
  WEBJS_AUTH: defaulted(webjsAuth, 'local'),
  /** Chromium switches added to the webjs driver's own (space-separated) */
  WEBJS_CHROME_ARGS: defaulted(chromeSwitches, () => []),
  /** resource types WhatsApp Web's page is kept from loading: image, media, font (default none) */
  WEBJS_BLOCK_RESOURCES: defaulted(blockList, () => []),
  /** sandbox network: 'embedded' (in-process), 'off', or the URL of a separate `mgw sandbox` process */
  SANDBOX: defaulted(sandbox, 'embedded'),
  /** create a demo instance on an empty data directory */
  DEMO_INSTANCE: defaulted(bool, true),
  MEDIA_MAX_BYTES: defaulted(int(1), 16 * 1024 * 1024),
  MEDIA_BASE64_MAX_BYTES: defaulted(int(1), 7 * 1024 * 1024),
  MEDIA_UPLOAD_MAX_BYTES: defaulted(int(1), 64 * 1024 * 1024),
  /**
   * at most a century: a stored file's expiry (upload time plus this) must be a date PostgreSQL and JavaScript can
   * hold; found from the outside: MEDIA_RETENTION_HOURS=9999999999 started, and every upload was 500 INTERNAL_ERROR
   */
  MEDIA_RETENTION_HOURS: defaulted(int(1, 876_000), 72),
  MEDIA_STORE_MAX_MB: defaulted(int(1), 2048),
  QUEUE_MAX_PENDING: defaulted(int(1), 5000),
  FETCH_MESSAGES_MAX: defaulted(int(1, 10_000), 200),
  INTERACTION_RATE_POINTS: defaulted(int(1), 60),
  LEGACY_SYNC_TIMEOUT_MS: defaulted(int(0, DAY_MS), 20_000),
  LEGACY_CALLER_TIMEOUT_MS: defaulted(int(5_001, DAY_MS), 30_000),
  ORDERED_RESTART_HARD_MS: defaulted(int(1_000, DAY_MS), 120_000),
  DRIVER_CALL_TIMEOUT_MS: defaulted(int(100, DAY_MS), 30_000),
  /**
   * longest a graceful stop (SIGTERM/SIGINT) may take before the process logs the stage it is stuck in and exits 1;
   * at most node's longest timer (2^31 - 1 ms): above it setTimeout fires after 1 ms, a hard stop at once
   */
  STOP_TIMEOUT_MS: defaulted(int(1_000, LONGEST_TIMER_MS), 30_000),
  WEBHOOK_ALLOW_PRIVATE: defaulted(bool, false),
  /** this node's id in a cluster (default: the host name and a hash of DATA_DIR) */
  NODE_ID: optional(nodeId),
  /** the URL the other nodes use to reach this one (default: from HOST and PORT) */
  NODE_URL: optional(httpUrl),
  /** shared by the nodes of one cluster; a node refuses to join live nodes without it */
  CLUSTER_SECRET: optional(clusterSecret),
  /** how many instances this node takes, relative to the others (placement weight) */
  NODE_CAPACITY: defaulted(int(1, 100_000), 100),
  /** an owner that stops renewing loses its instances after this long (taken over by another node) */
  LEASE_TTL_MS: defaulted(int(2_000, 120_000), 10_000),
  /** a second token that may read /metrics only (a Prometheus scraper need not hold the admin token) */
  METRICS_TOKEN: optional(metricsToken),
});

export type Config = Infer<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    /** what the variable accepts (`must be …`), never its value */
    readonly reason: string,
  ) {
    super(`invalid configuration: ${variable} ${reason}`);
    this.name = 'ConfigError';
  }
}

/**
 * Read the configuration from `env` (only the keys the schema knows; empty strings count as unset).
 * Relative paths are resolved against the current working directory, once, here.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.schema)) {
    const v = env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  try {
    const config = create(input, ConfigSchema);
    // the default is resolved at load, not at import: a process may chdir between the two
    return input.DATA_DIR === undefined ? { ...config, DATA_DIR: path.resolve('data') } : config;
  } catch (err) {
    if (err instanceof StructError) {
      const failure = err.failures()[0] ?? err;
      const variable = String(failure.path[0] ?? failure.key ?? 'configuration');
      // every struct above answers with its own "must …" sentence; superstruct's own messages echo values
      const reason = failure.message.startsWith('must ') ? failure.message : 'is not valid';
      throw new ConfigError(variable, reason);
    }
    throw err;
  }
}

/**
 * Only the variables `keys` of `env`, read as loadConfig reads them: the same checks, defaults and ConfigError
 * (every other variable takes its default, which passes). For a process that reads a few of the gateway's
 * variables and must take them as the gateway does (`mgw`, src/cli/api.ts: PORT="80 " and PORT=80/x went to
 * port 80 where the gateway refuses both, PORT= to port 80 where the gateway listens on 3000), without refusing
 * to run for a variable it does not read.
 */
export function loadSettings<K extends keyof Config>(keys: readonly K[], env: NodeJS.ProcessEnv = process.env): Pick<Config, K> {
  const only: NodeJS.ProcessEnv = {};
  for (const key of keys) only[key] = env[key];
  return loadConfig(only);
}

/** v1 synchronous wait: LEGACY_SYNC_TIMEOUT_MS hard-capped at LEGACY_CALLER_TIMEOUT_MS minus 5 s. */
export function legacyWaitMs(config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS'>): number {
  return Math.min(config.LEGACY_SYNC_TIMEOUT_MS, config.LEGACY_CALLER_TIMEOUT_MS - 5_000);
}
