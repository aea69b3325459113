/**
 * The gateway as `npm start` and `mgw start` run it (src/main.ts loads this module), with the environment's
 * configuration (embedded PostgreSQL and the sandbox network unless told otherwise). Prints the admin token and the demo instance's key on the start that creates them.
 * SIGTERM/SIGINT (or, under npm, the end of its parent) stop it gracefully: stop accepting, finish in-flight
 * dispatches, exit 0. A stop that has not finished within STOP_TIMEOUT_MS logs the stage it was waiting on and
 * exits 1.
 */
import path from 'node:path';
import { loadConfig, ConfigError, type Config } from './config.js';
import { createLogger } from './log.js';
import { startGateway, type Gateway } from './gateway.js';
import { isConnectionError } from './store/health.js';
import { onStopRequest } from './stop-signals.js';
import { listenFailure, unresolvedHost } from './listen-failure.js';

export async function runMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger({ level: config.LOG_LEVEL });
  // A signal during the start (the embedded PostgreSQL's first init takes 30–40 s) stops it gracefully too: the
  // start goes no further than the step it is on, stops what it started, and the process exits 0. Found by the
  // outside README probe: a SIGTERM before the gateway listened killed it with the default signal (143, no line).
  let running: Gateway | null = null;
  const starting = new AbortController();
  /** when the graceful stop began (Date.now()), null before it */
  let stopSince: number | null = null;
  /** where the graceful stop is: the stage it waits on, and how long it has run (a hard or forced stop's line) */
  const stopPosition = () => ({ stage: running?.stopStage() ?? 'start: stopping what it started', elapsedMs: stopSince === null ? 0 : Date.now() - stopSince });
  /** set when the gateway stops because it cannot go on (`onFatal`): the exit code is 1, not 0 */
  let fatal = false;
  const stop = (reason: string) => {
    const gw = running;
    log.info({ reason }, gw ? 'stopping: finishing in-flight dispatches' : 'stopping: the start is cut short, stopping what it started');
    const limitMs = config.STOP_TIMEOUT_MS;
    stopSince = Date.now();
    // The last resort: every statement and driver call of the stop is bounded, so this fires only when a stage
    // hangs all the same. It says which one, so that the operator sees more than an exit code 1.
    // Deliberately NOT unref()'d: while the stop runs, this timer holds the event loop. Were it unref'd, a stop
    // stuck on a promise that nothing else keeps alive (every socket and timer already closed) would let node
    // exit by itself, with code 0, as if the stop had succeeded. Held, it ends such a stop here, with 1 and
    // this line. A stop that finishes calls process.exit(0) itself, so the held timer never delays it.
    setTimeout(() => {
      const { stage, elapsedMs } = stopPosition();
      log.error({ stage, elapsedMs, limitMs }, `hard stop: the graceful stop did not finish within STOP_TIMEOUT_MS (${limitMs} ms); still waiting on ${stage} after ${elapsedMs} ms; exiting 1`);
      process.exit(1);
    }, limitMs);
    if (!gw) {
      // runMain's start rejects once what it started is stopped, and exits 0 (below)
      starting.abort(reason);
      return;
    }
    gw.stop().then(
      () => process.exit(fatal ? 1 : 0),
      (err: unknown) => {
        log.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  /** What the gateway cannot go on from (its embedded database gone): stopped as a signal stops it, exit 1. */
  const onFatal = (message: string) => {
    log.error(`${message}; stopping`);
    // a stop already under way ends with 1 too: what it was stopping could not be kept
    fatal = true;
    if (stopSince === null) removeHandlers.request('fatal');
  };
  const removeHandlers = onStopRequest(stop, {
    env,
    // A second signal while stopping (the operator insists): exit 130 at once, as before, but say where the
    // stop was, as the hard stop does; a dispatch cut off in the call is found `sending` by the next start
    // and told as `unknown`, never sent again.
    onForce: () => {
      const { stage, elapsedMs } = stopPosition();
      log.error({ stage, elapsedMs }, `forced stop: another signal while stopping; the graceful stop was waiting on ${stage} after ${elapsedMs} ms; exiting 130`);
      process.exit(130);
    },
  });

  let gw;
  try {
    gw = await startGateway({ config, log, signal: starting.signal, onFatal });
  } catch (err) {
    if (starting.signal.aborted) {
      log.info({ reason: String(starting.signal.reason) }, 'stopped before the start finished');
      process.exit(fatal ? 1 : 0);
    }
    removeHandlers();
    throw new Error(startFailure(err, config));
  }
  running = gw;

  // The one place secrets are shown: on the terminal of the start that created them, never in a log line.
  const lines = [`messaging gateway listening on ${gw.url}`, `  health:   curl ${gw.url}/health`];
  if (gw.adminTokenGenerated) lines.push(`  admin token (shown once; also in ${config.DATA_DIR}/admin-token): ${gw.adminToken}`);
  if (gw.demo) {
    lines.push(
      gw.demo.phoneNumber !== null
        ? `  demo instance on the sandbox network, linked as +${gw.demo.phoneNumber}`
        : gw.demo.notLinked !== undefined
          ? `  demo instance on the sandbox network, not linked yet (${gw.demo.notLinked}): it links itself once the sandbox network answers`
          : `  demo instance on the sandbox network, not linked: it runs on ${gw.demo.node === null ? 'no node yet' : `node ${gw.demo.node}`} (link it there: console)`,
      `  demo API key (shown once): ${gw.demo.apiKey}`,
      `  demo instance id: ${gw.demo.instance.id} (what the network received: GET /sandbox/v1/instances/${gw.demo.instance.id}/ledger, admin token)`,
      `  try:      curl -H 'Authorization: Bearer ${gw.demo.apiKey}' ${gw.url}/api/status`,
    );
  }
  lines.push(`  console:  ${gw.url}/console   API reference: ${gw.url}/docs`);
  // for the person at the terminal: stderr, so that stdout stays JSON log lines for machines
  process.stderr.write(`${lines.join('\n')}\n`);
  // shown now (stderr is written synchronously): a start that failed before this line shows them again next time
  try {
    gw.shown();
  } catch (err) {
    log.warn({ err }, `could not note in ${config.DATA_DIR} that the banner was shown: the next start shows it again`);
  }
  // whatsapp-web.js has internal promises nobody awaits (page re-injection, its own destroy): log, do not die.
  process.on('unhandledRejection', (reason) => log.error({ err: reason }, 'unhandled rejection'));
}

/** A start failure a person can act on: which variable to look at. Never echoes DATABASE_URL's password. */
export function startFailure(err: unknown, config: Pick<Config, 'DATABASE_URL' | 'PORT' | 'HOST'> & Partial<Pick<Config, 'DATA_DIR'>>): string {
  const e = err instanceof Error ? (err as Error & { code?: unknown; syscall?: unknown; path?: unknown; address?: unknown }) : null;
  let message = e ? e.message : thrownText(err);
  for (const secret of config.DATABASE_URL ? passwordOf(config.DATABASE_URL) : []) message = message.split(secret).join('***');
  // a file of DATA_DIR (its lock is a unix socket, so a listen too) that cannot be made or written: not PORT's fault
  // (found from the outside: a read-only DATA_DIR was "PORT 0 … cannot be used (listen EROFS …/run/gateway.lock)")
  const file = typeof e?.path === 'string' ? e.path : e?.syscall === 'listen' && typeof e.address === 'string' && e.address.includes(path.sep) ? e.address : null;
  if (file !== null && typeof e?.code === 'string' && config.DATA_DIR && inDataDir(file, config.DATA_DIR)) {
    return `DATA_DIR ${config.DATA_DIR} cannot be used: ${e.code} on ${file} (${message}): give this user a DATA_DIR it can write`;
  }
  const listen = { portName: 'PORT', port: config.PORT, hostName: 'HOST', host: config.HOST };
  const notListening = e ? listenFailure(e, message, listen) : null;
  if (notListening !== null) return notListening;
  // HOST names no address here (found from the outside: "getaddrinfo ENOTFOUND nosuch.invalid", no variable named)
  const unresolved = (e as { hostname?: unknown } | null)?.hostname;
  if (e?.syscall === 'getaddrinfo' && unresolved === config.HOST && hostOf(config.DATABASE_URL) !== config.HOST) return unresolvedHost(e.code, listen);
  const sqlState = typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code);
  // the TLS the URL asks for (sslmode) and the server do not agree: pg's message names neither (found from the outside)
  const tls = /\bSSL\b/.test(message);
  const network = e?.syscall === 'connect' || e?.syscall === 'getaddrinfo' || isConnectionError(err) || tls;
  if (config.DATABASE_URL && (sqlState || network)) return `cannot use the PostgreSQL server of DATABASE_URL: ${message}`;
  return message;
}

/**
 * What a thrown value that is not an Error says: its `message`, else its JSON (found from the outside: the embedded
 * PostgreSQL on a full disk threw an object, and the start printed "[object Object]").
 */
function thrownText(err: unknown): string {
  if (typeof err !== 'object' || err === null) return String(err);
  const { message } = err as { message?: unknown };
  if (typeof message === 'string' && message !== '') return message;
  try {
    return JSON.stringify(err).slice(0, 500);
  } catch {
    return Object.prototype.toString.call(err);
  }
}

/** Whether `file` is in DATA_DIR, or is its lock (which a long DATA_DIR puts in the temporary directory: src/bootstrap.ts). */
function inDataDir(file: string, dataDir: string): boolean {
  const relative = path.relative(path.resolve(dataDir), path.resolve(file));
  return (!relative.startsWith('..') && !path.isAbsolute(relative)) || /^mgw-[0-9a-f]{24}\.lock$/.test(path.basename(file));
}

/** The host of DATABASE_URL (null without one, or when it is not a URL). */
function hostOf(url: string | undefined): string | null {
  try {
    return url ? new URL(url).hostname : null;
  } catch {
    return null;
  }
}

/** The password of a URL as written and decoded (either may appear in a driver's message). */
function passwordOf(url: string): string[] {
  try {
    const raw = new URL(url).password;
    return raw ? [raw, decodeURIComponent(raw)] : [];
  } catch {
    return [];
  }
}
