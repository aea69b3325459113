/**
 * Configuration: the environment, read once through one superstruct schema. A bad value stops the start
 * with an error that names the variable (never its value: it may be a secret).
 */
import { coerce, create, defaulted, enums, integer, min, max, object, optional, string, boolean, StructError, type Infer } from 'superstruct';

const int = (lo: number, hi = Number.MAX_SAFE_INTEGER) => coerce(max(min(integer(), lo), hi), string(), (v) => (/^-?\d+$/.test(v.trim()) ? Number(v) : NaN));
const bool = coerce(boolean(), string(), (v) => ['1', 'true', 'yes', 'on'].includes(v.trim().toLowerCase()) ? true : ['0', 'false', 'no', 'off', ''].includes(v.trim().toLowerCase()) ? false : (v as unknown as boolean));

export const ConfigSchema = object({
  PORT: defaulted(int(0, 65535), 3000),
  HOST: defaulted(string(), '127.0.0.1'),
  DATABASE_URL: optional(string()),
  DATA_DIR: defaulted(string(), './data'),
  ADMIN_TOKEN: optional(string()),
  LOG_LEVEL: defaulted(enums(['trace', 'debug', 'info', 'warn', 'error', 'fatal']), 'info'),
  CHROME_PATH: defaulted(string(), '/usr/bin/chromium'),
  /** sandbox network: 'embedded' (in-process), 'off', or the URL of a separate `mgw sandbox` process */
  SANDBOX: defaulted(string(), 'embedded'),
  /** create a demo instance on an empty data directory */
  DEMO_INSTANCE: defaulted(bool, true),
  MEDIA_MAX_BYTES: defaulted(int(1), 16 * 1024 * 1024),
  MEDIA_BASE64_MAX_BYTES: defaulted(int(1), 7 * 1024 * 1024),
  MEDIA_UPLOAD_MAX_BYTES: defaulted(int(1), 64 * 1024 * 1024),
  MEDIA_RETENTION_HOURS: defaulted(int(1), 72),
  MEDIA_STORE_MAX_MB: defaulted(int(1), 2048),
  QUEUE_MAX_PENDING: defaulted(int(1), 5000),
  FETCH_MESSAGES_MAX: defaulted(int(1, 10_000), 200),
  INTERACTION_RATE_POINTS: defaulted(int(1), 60),
  LEGACY_SYNC_TIMEOUT_MS: defaulted(int(0), 20_000),
  LEGACY_CALLER_TIMEOUT_MS: defaulted(int(5_001), 30_000),
  ORDERED_RESTART_HARD_MS: defaulted(int(1_000), 120_000),
  DRIVER_CALL_TIMEOUT_MS: defaulted(int(100), 30_000),
  WEBHOOK_ALLOW_PRIVATE: defaulted(bool, false),
});

export type Config = Infer<typeof ConfigSchema>;

export class ConfigError extends Error {
  constructor(readonly variable: string, reason: string) {
    super(`invalid configuration: ${variable} ${reason}`);
    this.name = 'ConfigError';
  }
}

/** Read the configuration from `env` (only the keys the schema knows; empty strings count as unset). */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, string> = {};
  for (const key of Object.keys(ConfigSchema.schema)) {
    const v = env[key];
    if (v !== undefined && v !== '') input[key] = v;
  }
  try {
    return create(input, ConfigSchema);
  } catch (err) {
    if (err instanceof StructError) {
      const variable = String(err.path[0] ?? err.key ?? 'configuration');
      throw new ConfigError(variable, `is not valid (expected ${err.type})`);
    }
    throw err;
  }
}

/** v1 synchronous wait: LEGACY_SYNC_TIMEOUT_MS hard-capped at LEGACY_CALLER_TIMEOUT_MS minus 5 s. */
export function legacyWaitMs(config: Pick<Config, 'LEGACY_SYNC_TIMEOUT_MS' | 'LEGACY_CALLER_TIMEOUT_MS'>): number {
  return Math.min(config.LEGACY_SYNC_TIMEOUT_MS, config.LEGACY_CALLER_TIMEOUT_MS - 5_000);
}


