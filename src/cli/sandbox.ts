/** `mgw sandbox`: the sandbox network as its own process, until SIGTERM/SIGINT. */
import { startSandboxServer } from '../sandbox/server.js';
import { createLogger } from '../log.js';

export async function runSandboxProcess(opts: { port: number; host: string; statePath: string | undefined }): Promise<void> {
  const log = createLogger({ level: 'info', name: 'mgw-sandbox' });
  const server = await startSandboxServer({ port: opts.port, host: opts.host, statePath: opts.statePath ?? null, log });
  process.stdout.write(`sandbox network listening on ${server.url} (set SANDBOX=${server.url} for the gateway)\n`);
  const stop = () => {
    void server.close().then(() => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
