/**
 * `mgw`: the operator's command line. `mgw start` runs the gateway, `mgw sandbox` the sandbox network as its
 * own process; every other verb calls the operator API (/admin/v1) of a running gateway. List-like answers are
 * tables (`--json` prints the API's envelope for scripts); every verb honours `--help`; a missing argument or a
 * bad option is a usage error (exit 2); a refusal by the gateway exits 1 with its envelope on stdout.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { pairAnswer, pairText, qrAnswer, qrText } from './link.js';
import { parseArgs, table, usageLine, UsageError, type Parsed, type VerbSpec } from './args.js';

const ENVIRONMENT = `environment:
  MGW_URL      the gateway's address (default http://127.0.0.1:$PORT, PORT default 3000)
  ADMIN_TOKEN  the operator token (default: read from $DATA_DIR/admin-token)
  DATA_DIR     the gateway's data directory (default ./data); mgw start keeps its data there
`;

interface Verb extends VerbSpec {
  run(p: Parsed): Promise<void>;
}

const baseUrl = (): string => process.env.MGW_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;

async function adminToken(): Promise<string> {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.resolve(process.env.DATA_DIR || 'data', 'admin-token');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`no ADMIN_TOKEN set and ${file} not readable`);
  }
}

/** fetch, with a connection failure named by the URL that could not be reached (and its cause). */
async function request(url: URL, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    const code = typeof cause === 'object' && cause !== null && 'code' in cause && typeof cause.code === 'string' ? cause.code : null;
    const why = code ?? (cause instanceof Error ? cause.message : String(cause));
    throw new Error(`cannot reach the gateway at ${url.origin} (${why}); is it running? set MGW_URL to its address`);
  }
}

interface Envelope {
  ok: boolean;
  body: unknown;
}

async function call(method: string, route: string, body?: unknown): Promise<Envelope> {
  const base = baseUrl();
  let url: URL;
  try {
    url = new URL(route, base);
  } catch {
    throw new UsageError(`MGW_URL is not a URL: ${base}`);
  }
  const res = await request(url, {
    method,
    headers: { authorization: `Bearer ${await adminToken()}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json: unknown = await res.json().catch(() => ({ success: false, error: `HTTP ${res.status}` }));
  return { ok: res.ok, body: json };
}

const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A refusal: the envelope on stdout, exit 1. Otherwise `show` the data (or the envelope with --json). */
function answer(e: Envelope, p: Parsed, show?: (data: unknown) => string): void {
  if (!e.ok) {
    process.exitCode = 1;
    print(e.body);
    return;
  }
  if (p.flags.json === true || !show) return print(e.body);
  process.stdout.write(show(isRecord(e.body) ? e.body.data : undefined));
}

/** The `items` of a list answer, each a record. */
const items = (data: unknown): Record<string, unknown>[] =>
  (isRecord(data) && Array.isArray(data.items) ? data.items : []).filter(isRecord);
const str = (v: unknown): string | null => (v === null || v === undefined ? null : typeof v === 'string' ? v : JSON.stringify(v));

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} is not valid JSON`);
  }
}

const inst = (id: string | undefined, rest = ''): string => `/admin/v1/instances/${encodeURIComponent(id ?? '')}${rest}`;
const arg = (p: Parsed, name: string): string => p.args[name] ?? '';

/** Ask before a delete; without a terminal only `--yes` goes ahead. */
async function confirm(p: Parsed, verb: string, what: string): Promise<void> {
  if (p.flags.yes === true) return;
  if (!process.stdin.isTTY) throw new UsageError(`mgw ${verb}: refusing to ${what} without confirmation: stdin is not a terminal; pass --yes`);
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const reply = (await rl.question(`${what}? type 'yes' to go ahead: `)).trim().toLowerCase();
    if (reply !== 'yes' && reply !== 'y') throw new UsageError(`mgw ${verb}: not confirmed, nothing deleted`);
  } finally {
    rl.close();
  }
}

const instancesTable = (data: unknown): string =>
  table(['ID', 'NAME', 'DRIVER', 'STATUS', 'PHONE', 'NODE'], items(data).map((i) => [str(i.id), str(i.name), str(i.driver), str(i.status), str(i.phoneNumber), str(i.node)]));

const deliveriesTable = (data: unknown): string => {
  const rows = items(data);
  const more = isRecord(data) && typeof data.nextCursor === 'string' ? `(more: --cursor ${data.nextCursor})\n` : '';
  return table(
    ['EVENT ID', 'EVENT', 'STATE', 'ATTEMPTS', 'LAST STATUS', 'CREATED', 'LAST ERROR'],
    rows.map((d) => [str(d.eventId), str(d.event), str(d.state), `${str(d.attempts) ?? '?'}/${str(d.maxAttempts) ?? '?'}`, str(d.lastStatus), str(d.createdAt), str(d.lastError)]),
  ) + more;
};

const nodesTable = (data: unknown): string =>
  table(['ID', 'URL', 'CAPACITY', 'INSTANCES', 'SELF', 'HEARTBEAT'], items(data).map((n) => [str(n.id), str(n.url), str(n.capacity), str(n.instances), n.self === true ? 'yes' : 'no', str(n.heartbeatAt)]));

const webhookText = (data: unknown): string => {
  if (!isRecord(data)) return '\n';
  return Object.entries(data).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(',') : str(v) ?? '-'}`).join('\n') + '\n';
};

async function setWebhook(p: Parsed): Promise<void> {
  const events = p.args.events;
  answer(
    await call('PUT', inst(p.args.id, '/webhook'), {
      url: arg(p, 'url'),
      secret: arg(p, 'secret'),
      ...(events ? { events: events.split(',').map((e) => e.trim()).filter(Boolean) } : {}),
      ...(p.flags['allow-private'] === true ? { allowPrivate: true } : {}),
    }),
    p,
    webhookText,
  );
}

const VERBS: Verb[] = [
  {
    name: 'start', args: [], flags: {}, summary: 'run the gateway (same as npm start)',
    async run() {
      const { runMain } = await import('../main.js');
      await runMain();
    },
  },
  {
    name: 'sandbox', args: [], flags: { port: 'value', host: 'value', state: 'value' }, flagsUsage: '[--port N] [--host H] [--state FILE]',
    summary: 'run the sandbox network as its own process',
    async run(p) {
      const { runSandboxProcess, sandboxOptions } = await import('./sandbox.js');
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
  {
    name: 'instances', args: [], flags: {}, flagsUsage: '[--json]', summary: 'list instances (a table; --json for scripts)',
    async run(p) {
      answer(await call('GET', '/admin/v1/instances'), p, instancesTable);
    },
  },
  {
    name: 'create', args: ['name'], flags: { driver: 'value', settings: 'value' }, flagsUsage: '[--driver sandbox|webjs] [--settings JSON]',
    summary: 'create an instance; prints its API key once',
    async run(p) {
      const settings = p.flags.settings;
      answer(await call('POST', '/admin/v1/instances', {
        name: arg(p, 'name'),
        driver: typeof p.flags.driver === 'string' ? p.flags.driver : 'sandbox',
        ...(typeof settings === 'string' ? { settings: parseJson(settings, '--settings') } : {}),
      }), p);
    },
  },
  {
    name: 'get', args: ['id'], flags: {}, summary: 'show one instance with its live status',
    async run(p) {
      answer(await call('GET', inst(p.args.id)), p);
    },
  },
  {
    name: 'settings', args: ['id', 'json'], flags: {}, summary: `change settings, e.g. mgw settings <id> '{"maxPerHour":30}'`,
    async run(p) {
      answer(await call('PATCH', inst(p.args.id), { settings: parseJson(arg(p, 'json'), 'the settings JSON') }), p);
    },
  },
  {
    name: 'rotate-key', args: ['id'], flags: {}, summary: 'revoke the key and print a new one',
    async run(p) {
      answer(await call('POST', inst(p.args.id, '/keys')), p);
    },
  },
  {
    name: 'restart', args: ['id'], flags: {}, summary: 'ordered restart',
    async run(p) {
      answer(await call('POST', inst(p.args.id, '/restart')), p);
    },
  },
  {
    name: 'logout', args: ['id'], flags: {}, summary: 'unlink the number',
    async run(p) {
      answer(await call('POST', inst(p.args.id, '/logout')), p);
    },
  },
  {
    name: 'qr', args: ['id'], flags: {}, summary: 'print the QR to scan (in the terminal) while it waits for a link',
    async run(p) {
      const e = await call('GET', inst(p.args.id, '/qr'));
      const qr = e.ok && p.flags.json !== true ? qrAnswer(e.body) : null;
      if (!qr) return answer(e, p);
      process.stdout.write(await qrText(arg(p, 'id'), qr));
    },
  },
  {
    name: 'pair', args: ['id', 'phone'], flags: {}, summary: 'link by pairing code: prints the code to type on the phone (international number, e.g. 4915112345678)',
    async run(p) {
      const phone = arg(p, 'phone').replace(/[\s+()-]/g, '');
      if (!phone) throw new UsageError('mgw pair: missing <phone> (the international number, e.g. 4915112345678)');
      const e = await call('POST', inst(p.args.id, '/pairing-code'), { phoneNumber: phone });
      const code = e.ok && p.flags.json !== true ? pairAnswer(e.body) : null;
      if (!code) return answer(e, p);
      process.stdout.write(pairText(code));
    },
  },
  {
    name: 'delete', args: ['id'], flags: { yes: 'bool', y: 'bool' }, flagsUsage: '[--yes]', summary: 'delete the instance and its data (asks first; --yes to skip)',
    async run(p) {
      if (p.flags.y === true) p.flags.yes = true;
      await confirm(p, 'delete', `delete instance ${arg(p, 'id')} and all its data`);
      answer(await call('DELETE', inst(p.args.id)), p);
    },
  },
  {
    name: 'webhook show', args: ['id'], flags: {}, summary: "show the instance's webhook (the secret is never shown)",
    async run(p) {
      answer(await call('GET', inst(p.args.id, '/webhook')), p, webhookText);
    },
  },
  {
    name: 'webhook set', args: ['id', 'url', 'secret', 'events?'], flags: { 'allow-private': 'bool' }, flagsUsage: '[--allow-private]',
    summary: 'set the webhook receiver (events: comma-separated; --allow-private for a private address)',
    run: setWebhook,
  },
  {
    name: 'webhook delete', args: ['id'], flags: { yes: 'bool', y: 'bool' }, flagsUsage: '[--yes]', summary: "remove the instance's webhook (asks first; --yes to skip)",
    async run(p) {
      if (p.flags.y === true) p.flags.yes = true;
      await confirm(p, 'webhook delete', `remove the webhook of instance ${arg(p, 'id')} (pending deliveries fail)`);
      answer(await call('DELETE', inst(p.args.id, '/webhook')), p);
    },
  },
  {
    name: 'webhook-test', args: ['id'], flags: {}, summary: "send event 'test'",
    async run(p) {
      answer(await call('POST', inst(p.args.id, '/webhook/test')), p);
    },
  },
  {
    name: 'deliveries', args: ['id'], flags: { state: 'value', limit: 'value', cursor: 'value' }, flagsUsage: '[--state pending|delivered|failed] [--limit N] [--cursor C]',
    summary: 'recent webhook deliveries, newest first (a table; --json for scripts)',
    async run(p) {
      const q = new URLSearchParams();
      for (const k of ['state', 'limit', 'cursor']) {
        const v = p.flags[k];
        if (typeof v === 'string') q.set(k, v);
      }
      const qs = q.size ? `?${q.toString()}` : '';
      answer(await call('GET', inst(p.args.id, `/webhook/deliveries${qs}`)), p, deliveriesTable);
    },
  },
  {
    name: 'redeliver', args: ['id', 'deliveryId'], flags: {}, summary: 'send a webhook delivery again (its event id, from mgw deliveries)',
    async run(p) {
      answer(await call('POST', inst(p.args.id, `/webhook/deliveries/${encodeURIComponent(arg(p, 'deliveryId'))}/redeliver`)), p);
    },
  },
  {
    name: 'nodes', args: [], flags: {}, flagsUsage: '[--json]', summary: 'the live gateway nodes (a table; --json for scripts)',
    async run(p) {
      answer(await call('GET', '/admin/v1/nodes'), p, nodesTable);
    },
  },
  {
    name: 'health', args: [], flags: {}, summary: 'GET /health',
    async run() {
      const res = await request(new URL('/health', baseUrl()), {});
      if (!res.ok) process.exitCode = 1;
      print(await res.json().catch(() => ({ status: res.status })));
    },
  },
];

function usage(): string {
  const lines = VERBS.map((v) => {
    const left = usageLine(v).slice(4);
    return left.length > 38 ? `  ${left}\n  ${''.padEnd(38)}  ${v.summary}` : `  ${left.padEnd(38)}  ${v.summary}`;
  });
  return `usage: mgw <command> [args] [--json] [--help]\n\n${lines.join('\n')}\n\n${ENVIRONMENT}`;
}

/** The verb named by the first word (or two: `webhook show`); `webhook <id> <url> <secret>` is the older `webhook set`. */
function select(argv: string[]): { verb: Verb; rest: string[] } | null {
  const [first, second, ...more] = argv;
  const two = VERBS.find((v) => v.name === `${first} ${second}`);
  if (two) return { verb: two, rest: more };
  const one = VERBS.find((v) => v.name === first);
  if (one) return { verb: one, rest: argv.slice(1) };
  if (first === 'webhook') {
    const set = VERBS.find((v) => v.name === 'webhook set');
    if (set && second !== undefined && !second.startsWith('-')) return { verb: set, rest: argv.slice(1) };
  }
  return null;
}

async function main(argv: string[]): Promise<void> {
  const cmd = argv[0];
  if (cmd === undefined || cmd === 'help' || cmd === '--help' || cmd === '-h') {
    process.stdout.write(usage());
    return;
  }
  const found = select(argv);
  if (!found) {
    if (cmd === 'webhook') throw new UsageError('mgw webhook: missing a subcommand: show, set or delete (usage: mgw webhook show|set|delete <id> …)');
    throw new UsageError(`mgw: unknown command '${cmd}' (mgw --help lists them)`);
  }
  const { verb, rest } = found;
  const parsed = parseArgs(verb, rest);
  if (parsed.help) {
    process.stdout.write(`usage: ${usageLine(verb)}\n\n  ${verb.summary}\n\n${ENVIRONMENT}`);
    return;
  }
  await verb.run(parsed);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : `mgw: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
