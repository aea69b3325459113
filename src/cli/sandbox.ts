/** `mgw sandbox`: the sandbox network as its own process, until SIGTERM/SIGINT (or, under npm, its parent ends). */
import path from 'node:path';
import { startSandboxServer } from '../http/sandbox-server.js';
import { createLogger } from '../log.js';
import { onStopRequest } from '../stop-signals.js';
import { isHostSpelling } from '../config.js';
import { listenFailure, unresolvedHost } from '../listen-failure.js';

export interface SandboxProcessOptions {
  port: number;
  host: string;
  /** the state file; relative paths are resolved against the working directory */
  statePath: string | undefined;
}

/** `--port`, `--host`, `--state` of `mgw sandbox`, checked: an error names the flag and what it accepts. */
export function sandboxOptions(flag: (name: string) => string | undefined): SandboxProcessOptions {
  const rawPort = flag('port') ?? '3100';
  const port = /^\d+$/.test(rawPort) ? Number(rawPort) : NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be an integer from 0 to 65535, not '${rawPort}'`);
  const host = flag('host') ?? '127.0.0.1';
  // as the gateway's HOST (src/config.ts): found from the outside, `bad_host` and ' 127.0.0.1' failed only at the
  // listen, with a bare resolver error naming no option
  if (!isHostSpelling(host)) throw new Error('--host must be a host name or an IP address (e.g. 127.0.0.1, 0.0.0.0, localhost), without blanks');
  const state = flag('state');
  if (state !== undefined && (state.trim() === '' || state.trim() !== state)) throw new Error('--state must be a file path, without blanks around it');
  return { port, host, statePath: state === undefined ? undefined : path.resolve(state) };
}

/** A start that failed, named by the option it is about (found from the outside: bare node errors). */
export function sandboxStartFailure(err: unknown, opts: SandboxProcessOptions): string {
  const e = err as { code?: unknown; syscall?: unknown; message?: unknown } | null;
  const message = typeof e?.message === 'string' ? e.message : String(err);
  const listen = { portName: '--port', port: opts.port, hostName: '--host', host: opts.host };
  const notListening = e ? listenFailure(e, message, listen) : null;
  if (notListening !== null) return notListening;
  if (e?.syscall === 'getaddrinfo') return unresolvedHost(e.code, listen);
  if (opts.statePath !== undefined && (message.includes(opts.statePath) || (typeof e?.code === 'string' && message.includes(path.dirname(opts.statePath))))) {
    return `--state ${opts.statePath} cannot be used: ${message}`;
  }
  return message;
}

export async function runSandboxProcess(opts: SandboxProcessOptions): Promise<void> {
  const log = createLogger({ level: 'info', name: 'mgw-sandbox' });
  const server = await startSandboxServer({ port: opts.port, host: opts.host, statePath: opts.statePath ?? null, log }).catch((err: unknown) => {
    throw new Error(sandboxStartFailure(err, opts), { cause: err });
  });
  // for the person at the terminal: stderr, so that stdout stays JSON log lines for machines (as the gateway's banner)
  process.stderr.write(`sandbox network listening on ${server.url} (set SANDBOX=${server.url} for the gateway)\n`);
  onStopRequest((reason) => {
    log.info({ reason }, 'stopping the sandbox network');
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  });
}
