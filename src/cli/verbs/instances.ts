/**
 * The verbs on instances (/admin/v1/instances and one instance below it): list, create, show, settings, key
 * rotation, restart, logout, linking (`qr`, `pair`: link.ts draws what they print) and delete.
 */
import { UsageError, table, type Verb } from '../args.js';
import { answer, arg, call, confirm, inst, items, parseJson, str } from '../api.js';
import { pairAnswer, pairText, qrAnswer, qrText } from '../link.js';

/**
 * The STATUS cell: the instance's status, or `unknown` and why while the node that runs it cannot be asked
 * (`stateUnknown`: the gateway does not know it then; src/instances.ts).
 */
function statusCell(i: Record<string, unknown>): string | null {
  const u = i.stateUnknown as { node?: unknown; reason?: unknown } | null | undefined;
  if (u && typeof u === 'object') return `unknown: node ${str(u.node) ?? '?'} ${str(u.reason) ?? 'did not answer'}`;
  return str(i.status);
}

/** The `mgw instances` table of a list answer's `data`. */
export const instancesTable = (data: unknown): string =>
  table(['ID', 'NAME', 'DRIVER', 'STATUS', 'PHONE', 'NODE'], items(data).map((i) => [str(i.id), str(i.name), str(i.driver), statusCell(i), str(i.phoneNumber), str(i.node)]));

export const INSTANCE_VERBS: Verb[] = [
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
    name: 'replan', args: ['id'], flags: {}, summary: 're-plan every waiting job (after cancelling many: the rest move forward)',
    async run(p) {
      answer(await call('POST', inst(p.args.id, '/queue/replan')), p);
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
      await confirm(p, 'delete', `delete instance ${arg(p, 'id')} and all its data`);
      answer(await call('DELETE', inst(p.args.id)), p);
    },
  },
];
