/** The verbs on the gateway as a whole: its nodes and its health. */
import { table, type Verb } from '../args.js';
import { answer, call, envelopeOf, gatewayUrl, items, print, request, str } from '../api.js';

/** A node's clock against the database's, as an operator reads it (`+1500 ms`: ahead); `-` until measured. */
const offset = (v: unknown): string => (typeof v === 'number' ? `${v > 0 ? '+' : ''}${v} ms` : '-');

const nodesTable = (data: unknown): string =>
  table(
    ['ID', 'URL', 'CAPACITY', 'INSTANCES', 'SELF', 'HEARTBEAT', 'CLOCK'],
    items(data).map((n) => [str(n.id), str(n.url), str(n.capacity), str(n.instances), n.self === true ? 'yes' : 'no', str(n.heartbeatAt), offset(n.clockOffsetMs)]),
  );

export const STATUS_VERBS: Verb[] = [
  {
    name: 'nodes', args: [], flags: {}, flagsUsage: '[--json]', summary: 'the live gateway nodes (a table; --json for scripts)',
    async run(p) {
      answer(await call('GET', '/admin/v1/nodes'), p, nodesTable);
    },
  },
  {
    name: 'health', args: [], flags: {}, summary: 'GET /health',
    async run() {
      const base = gatewayUrl();
      const res = await request('/health', {}, base);
      const health = await envelopeOf(res, 'GET /health', base);
      if (!res.ok || health.success !== true) process.exitCode = 1;
      print(health);
    },
  },
];
