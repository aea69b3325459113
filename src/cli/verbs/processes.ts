/** `mgw start` and `mgw sandbox`: the processes `mgw` runs itself (each loaded only when asked for). */
import { UsageError, type Verb } from '../args.js';
import { loadStoppably } from '../../stop-signals.js';

export const PROCESS_VERBS: Verb[] = [
  {
    name: 'start', args: [], flags: {}, summary: 'run the gateway in this process (as npm start, without its V8 flag: see the README)',
    async run() {
      const { runMain } = await loadStoppably('the gateway', () => import('../../run-main.js'));
      await runMain();
    },
  },
  {
    name: 'sandbox', args: [], flags: { port: 'value', host: 'value', state: 'value' }, flagsUsage: '[--port N] [--host H] [--state FILE]',
    summary: 'run the sandbox network as its own process',
    async run(p) {
      const { runSandboxProcess, sandboxOptions } = await import('../sandbox.js');
      let opts;
      try {
        opts = sandboxOptions((name) => {
          const v = p.flags[name];
          return typeof v === 'string' ? v : undefined;
        });
      } catch (err) {
        throw new UsageError(`mgw sandbox: ${err instanceof Error ? err.message : String(err)}`);
      }
      await runSandboxProcess(opts);
    },
  },
];
