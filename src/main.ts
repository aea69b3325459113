/**
 * `npm start`: the gateway with the environment's configuration (embedded PostgreSQL and the sandbox network
 * unless told otherwise). Prints the admin token and the demo instance's key on the start that creates them.
 */
import { pathToFileURL } from 'node:url';
import { loadConfig, ConfigError } from './config.js';
import { createLogger } from './log.js';
import { startGateway } from './gateway.js';

export async function runMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  let config;
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
  const gw = await startGateway({ config, log });

  // The one place secrets are shown: on the terminal of the start that created them, never in a log line.
  const lines = [`messaging gateway listening on ${gw.url}`, `  health:   curl ${gw.url}/health`];
  if (gw.adminTokenGenerated) lines.push(`  admin token (shown once; also in ${config.DATA_DIR}/admin-token): ${gw.adminToken}`);
  if (gw.demo) {
    lines.push(
      `  demo instance on the sandbox network, linked as +${gw.demo.phoneNumber}`,
      `  demo API key (shown once): ${gw.demo.apiKey}`,
      `  try:      curl -H 'Authorization: Bearer ${gw.demo.apiKey}' ${gw.url}/api/status`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping: finishing in-flight dispatches');
    const hard = setTimeout(() => process.exit(1), 30_000);
    hard.unref();
    gw.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'stop failed');
        process.exit(1);
      },
    );
  };
  // whatsapp-web.js has internal promises nobody awaits (page re-injection, its own destroy): log, do not die.
  process.on('unhandledRejection', (reason) => log.error({ err: reason }, 'unhandled rejection'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  runMain().catch((err: unknown) => {
    process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
