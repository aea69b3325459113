/** The verbs on an instance's webhook: show, set, delete, a test event, the deliveries and a redelivery. */
import { table, UsageError, type Parsed, type Verb } from '../args.js';
import { answer, arg, call, confirm, inst, isRecord, items, str } from '../api.js';

const webhookText = (data: unknown): string => {
  if (!isRecord(data)) return '\n';
  return Object.entries(data).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(',') : str(v) ?? '-'}`).join('\n') + '\n';
};

const deliveriesTable = (data: unknown): string => {
  const rows = items(data);
  const more = isRecord(data) && typeof data.nextCursor === 'string' ? `(more: --cursor ${data.nextCursor})\n` : '';
  return table(
    ['EVENT ID', 'EVENT', 'STATE', 'ATTEMPTS', 'LAST STATUS', 'CREATED', 'LAST ERROR'],
    rows.map((d) => [str(d.eventId), str(d.event), str(d.state), `${str(d.attempts) ?? '?'}/${str(d.maxAttempts) ?? '?'}`, str(d.lastStatus), str(d.createdAt), str(d.lastError)]),
  ) + more;
};

/**
 * The secret as given, or, given as `-`, the first line of stdin: an argument is in the process list for anyone on
 * the machine to read (`ps`), for as long as the call takes (found from the outside).
 */
async function secretOf(p: Parsed): Promise<string> {
  const given = arg(p, 'secret');
  if (given !== '-') return given;
  // typed at a terminal it would be shown on the screen: from a file or a pipe only
  if (process.stdin.isTTY) throw new UsageError('the secret given as - is read from stdin, which is a terminal (it would show it): pipe it in, e.g. - < secret.txt');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
    chunks.push(b);
    size += b.length;
    if (b.includes(0x0a) || size > 64 * 1024) break;
  }
  const all = Buffer.concat(chunks);
  const end = all.indexOf(0x0a);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(end === -1 ? all : all.subarray(0, end));
  } catch {
    // replaced silently, the receiver's signature check would fail with a secret nobody has (found from the outside)
    throw new UsageError('the secret given as - is not UTF-8 text (its first line is read from stdin)');
  }
  const line = text.replace(/\r$/, '');
  if (line === '') throw new UsageError('the secret given as - is read from stdin, which gave none');
  return line;
}

async function setWebhook(p: Parsed): Promise<void> {
  const events = p.args.events;
  const secret = await secretOf(p);
  answer(
    await call('PUT', inst(p.args.id, '/webhook'), {
      url: arg(p, 'url'),
      secret,
      ...(events ? { events: events.split(',').map((e) => e.trim()).filter(Boolean) } : {}),
      ...(p.flags['allow-private'] === true ? { allowPrivate: true } : {}),
    }),
    p,
    webhookText,
  );
}

export const WEBHOOK_VERBS: Verb[] = [
  {
    name: 'webhook show', args: ['id'], flags: {}, summary: "show the instance's webhook (never the secret; the URL with its credentials, path tokens and query values masked)",
    async run(p) {
      answer(await call('GET', inst(p.args.id, '/webhook')), p, webhookText);
    },
  },
  {
    name: 'webhook set', args: ['id', 'url', 'secret', 'events?'], flags: { 'allow-private': 'bool' }, flagsUsage: '[--allow-private]',
    summary: 'set the webhook receiver (secret: - reads it from stdin, out of the process list; events: comma-separated; --allow-private for a private address)',
    run: setWebhook,
  },
  {
    name: 'webhook delete', args: ['id'], flags: { yes: 'bool', y: 'bool' }, flagsUsage: '[--yes]', summary: "remove the instance's webhook (asks first; --yes to skip)",
    async run(p) {
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
    name: 'redeliver', args: ['id', 'eventId'], flags: {}, summary: 'send a webhook delivery again (its event id, from mgw deliveries)',
    async run(p) {
      answer(await call('POST', inst(p.args.id, `/webhook/deliveries/${encodeURIComponent(arg(p, 'eventId'))}/redeliver`)), p);
    },
  },
];
