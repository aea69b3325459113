/**
 * `mgw`: the operator's command line. `mgw start` runs the gateway, `mgw sandbox` the sandbox network as its
 * own process; every other verb calls the operator API (/admin/v1) of a running gateway.
 *
 *   MGW_URL      gateway address (default http://127.0.0.1:$PORT, PORT default 3000)
 *   ADMIN_TOKEN  operator token (default: read from $DATA_DIR/admin-token)
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { pairAnswer, pairText, qrAnswer, qrText } from './link.js';

const USAGE = `usage: mgw <command> [args]

  start                                   run the gateway (same as npm start)
  sandbox [--port N] [--host H] [--state FILE]
                                          run the sandbox network as its own process
  instances                               list instances
  create <name> [--driver sandbox|webjs] [--settings JSON]
                                          create an instance; prints its API key once
  get <id>                                show one instance with its live status
  settings <id> <JSON>                    change settings, e.g. '{"maxPerHour":30}'
  rotate-key <id>                         revoke the key and print a new one
  restart <id>                            ordered restart
  logout <id>                             unlink the number
  qr <id>                                 print the QR to scan (in the terminal) while it waits for a link
  pair <id> <phone>                       link by pairing code: prints the code to type on the phone
  delete <id>                             delete the instance and its data
  webhook <id> <url> <secret> [events,…]  set the webhook receiver
  webhook-test <id>                       send event 'test'
  deliveries <id>                         recent webhook deliveries
  health                                  GET /health
`;

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : undefined;
}

async function adminToken(): Promise<string> {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.resolve(process.env.DATA_DIR || 'data', 'admin-token');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new Error(`no ADMIN_TOKEN set and ${file} not readable`);
  }
}

async function call(method: string, route: string, body?: unknown): Promise<unknown> {
  const base = process.env.MGW_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
  const res = await fetch(new URL(route, base), {
    method,
    headers: { authorization: `Bearer ${await adminToken()}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json: unknown = await res.json().catch(() => ({ success: false, error: `HTTP ${res.status}` }));
  if (!res.ok) {
    process.exitCode = 1;
  }
  return json;
}

const print = (v: unknown) => console.log(JSON.stringify(v, null, 2));

function parseJson(text: string | undefined, what: string): unknown {
  if (text === undefined) throw new Error(`${what} missing`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${what} is not valid JSON`);
  }
}

async function main(argv: string[]): Promise<void> {
  const [cmd, ...args] = argv;
  const id = args[0] ?? '';
  switch (cmd) {
    case 'start': {
      const { runMain } = await import('../main.js');
      await runMain();
      return;
    }
    case 'sandbox': {
      const { runSandboxProcess, sandboxOptions } = await import('./sandbox.js');
      await runSandboxProcess(sandboxOptions((name) => flag(args, name)));
      return;
    }
    case 'instances':
      return print(await call('GET', '/admin/v1/instances'));
    case 'create':
      return print(await call('POST', '/admin/v1/instances', {
        name: id,
        driver: flag(args, 'driver') ?? 'sandbox',
        ...(flag(args, 'settings') ? { settings: parseJson(flag(args, 'settings'), '--settings') } : {}),
      }));
    case 'get':
      return print(await call('GET', `/admin/v1/instances/${encodeURIComponent(id)}`));
    case 'settings':
      return print(await call('PATCH', `/admin/v1/instances/${encodeURIComponent(id)}`, { settings: parseJson(args[1], 'settings JSON') }));
    case 'rotate-key':
      return print(await call('POST', `/admin/v1/instances/${encodeURIComponent(id)}/keys`));
    case 'restart':
      return print(await call('POST', `/admin/v1/instances/${encodeURIComponent(id)}/restart`));
    case 'logout':
      return print(await call('POST', `/admin/v1/instances/${encodeURIComponent(id)}/logout`));
    case 'qr': {
      if (!id) throw new Error('usage: mgw qr <id>');
      const answer = await call('GET', `/admin/v1/instances/${encodeURIComponent(id)}/qr`);
      const qr = qrAnswer(answer);
      if (!qr) return print(answer);
      process.stdout.write(await qrText(id, qr));
      return;
    }
    case 'pair': {
      const phone = (args[1] ?? '').replace(/[\s+()-]/g, '');
      if (!id || !phone) throw new Error('usage: mgw pair <id> <phone>  (the international number, e.g. 4915112345678)');
      const answer = await call('POST', `/admin/v1/instances/${encodeURIComponent(id)}/pairing-code`, { phoneNumber: phone });
      const code = pairAnswer(answer);
      if (!code) return print(answer);
      process.stdout.write(pairText(code));
      return;
    }
    case 'delete':
      return print(await call('DELETE', `/admin/v1/instances/${encodeURIComponent(id)}`));
    case 'webhook':
      return print(await call('PUT', `/admin/v1/instances/${encodeURIComponent(id)}/webhook`, {
        url: args[1],
        secret: args[2],
        ...(args[3] ? { events: args[3].split(',') } : {}),
      }));
    case 'webhook-test':
      return print(await call('POST', `/admin/v1/instances/${encodeURIComponent(id)}/webhook/test`));
    case 'deliveries':
      return print(await call('GET', `/admin/v1/instances/${encodeURIComponent(id)}/webhook/deliveries`));
    case 'health': {
      const base = process.env.MGW_URL ?? `http://127.0.0.1:${process.env.PORT ?? 3000}`;
      return print(await (await fetch(new URL('/health', base))).json());
    }
    default:
      process.stdout.write(USAGE);
      if (cmd !== undefined && cmd !== 'help' && cmd !== '--help') process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(`mgw: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
