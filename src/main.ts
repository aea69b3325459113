/**
 * `npm start`'s entry: loads the gateway (src/run-main.ts) and runs it. SIGTERM and SIGINT are heard from the
 * first moment, while its modules load (src/stop-signals.ts `loadStoppably`), not only once they have.
 */
import { pathToFileURL } from 'node:url';
import { loadStoppably } from './stop-signals.js';

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { runMain } = await loadStoppably('the gateway', () => import('./run-main.js'));
  runMain().catch((err: unknown) => {
    process.stderr.write(`gateway failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
