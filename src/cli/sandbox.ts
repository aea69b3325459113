/** `mgw sandbox`: the sandbox network as its own process, until SIGTERM/SIGINT (or, under npm, its parent ends). */
import path from 'node:path';
import { startSandboxServer } from '../http/sandbox-server.js';
import { createLogger } from '../log.js';
import { onStopRequest } from '../stop-signals.js';

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
  if (host.trim() === '') throw new Error('--host must be a host name or address');
  const state = flag('state');
  if (state !== undefined && state.trim() === '') throw new Error('--state must be a file path');
  return { port, host, statePath: state === undefined ? undefined : path.resolve(state) };
}

export async function runSandboxProcess(opts: SandboxProcessOptions): Promise<void> {
  const log = createLogger({ level: 'info', name: 'mgw-sandbox' });
  const server = await startSandboxServer({ port: opts.port, host: opts.host, statePath: opts.statePath ?? null, log });
  process.stdout.write(`sandbox network listening on ${server.url} (set SANDBOX=${server.url} for the gateway)\n`);
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
