/**
 * `mgw`: the operator's command line. `mgw start` runs the gateway, `mgw sandbox` the sandbox network as its
 * own process; every other verb calls the operator API (/admin/v1) of a running gateway. List-like answers are
 * tables (`--json` prints the API's envelope for scripts); every verb honours `--help`; a missing argument or a
 * bad option is a usage error (exit 2); a refusal by the gateway exits 1 with its envelope on stdout.
 *
 * This file only finds the verb and runs it; the verbs live by family under verbs/ (processes, instances, webhooks,
 * status), the call to the gateway in api.ts, the argument grammar in args.ts.
 */
import { parseArgs, usageLine, UsageError, type Verb } from './args.js';
import { PROCESS_VERBS } from './verbs/processes.js';
import { INSTANCE_VERBS } from './verbs/instances.js';
import { WEBHOOK_VERBS } from './verbs/webhooks.js';
import { STATUS_VERBS } from './verbs/status.js';

const ENVIRONMENT = `environment:
  MGW_URL      the gateway's address, a path below it allowed (default http://$HOST:$PORT: HOST default
               127.0.0.1, and 127.0.0.1 for 0.0.0.0 or ::; PORT default 3000)
  ADMIN_TOKEN  the operator token (default: read from $DATA_DIR/admin-token)
  DATA_DIR     the gateway's data directory (default ./data); mgw start keeps its data there
  MGW_TIMEOUT_MS  how long to wait for the gateway's answer (default 60000); past it, exit 1 saying so
HOST, PORT, ADMIN_TOKEN and DATA_DIR are checked as the gateway checks them: a bad value exits 2, naming it.
`;

/** Every verb, in the order `mgw --help` lists them. */
const VERBS: Verb[] = [...PROCESS_VERBS, ...INSTANCE_VERBS, ...WEBHOOK_VERBS, ...STATUS_VERBS];

function usage(): string {
  const lines = VERBS.map((v) => {
    const left = usageLine(v).slice(4);
    return left.length > 38 ? `  ${left}\n  ${''.padEnd(38)}  ${v.summary}` : `  ${left.padEnd(38)}  ${v.summary}`;
  });
  return `usage: mgw <command> [args] [--json] [--help]\n\n${lines.join('\n')}\n\n${ENVIRONMENT}`;
}

const verbUsage = (verb: Verb) => `usage: ${usageLine(verb)}\n\n  ${verb.summary}\n\n${ENVIRONMENT}`;

/** The verb named by the first word (or two: `webhook show`); `webhook <id> <url> <secret>` is the older `webhook set`. */
function select(argv: string[]): { verb: Verb; rest: string[] } | null {
  const [first, second, ...more] = argv;
  const two = VERBS.find((v) => v.name === `${first} ${second}`);
  if (two) return { verb: two, rest: more };
  const one = VERBS.find((v) => v.name === first);
  if (one) return { verb: one, rest: argv.slice(1) };
  if (first === 'webhook') {
    const set = VERBS.find((v) => v.name === 'webhook set');
    // only with a URL after the id: `webhook shwo <id>` is a mistyped subcommand, not a webhook for instance `shwo`
    if (set && second !== undefined && !second.startsWith('-') && /^https?:\/\//i.test(more[0] ?? '')) return { verb: set, rest: argv.slice(1) };
  }
  return null;
}

const isHelp = (word: string | undefined) => word === '--help' || word === '-h';

async function main(argv: string[]): Promise<void> {
  const cmd = argv[0];
  if (cmd === 'help' || isHelp(cmd)) {
    // `mgw help <verb>`: that verb's usage, as `mgw <verb> --help`
    const named = cmd === 'help' && argv.length > 1 ? select(argv.slice(1)) : null;
    if (cmd === 'help' && argv.length > 1 && !named) throw new UsageError(`mgw: unknown command '${argv.slice(1).join(' ')}' (mgw --help lists them)`);
    process.stdout.write(named ? verbUsage(named.verb) : usage());
    return;
  }
  // `mgw webhook --help`: the webhook verbs' usage, as `mgw <verb> --help` prints a verb's (found from the outside: a
  // missing subcommand, exit 2)
  if (cmd === 'webhook' && isHelp(argv[1])) {
    const lines = VERBS.filter((v) => v.name.startsWith('webhook') || v.name === 'deliveries' || v.name === 'redeliver').map((v) => `  ${usageLine(v)}\n      ${v.summary}`);
    process.stdout.write(`usage: mgw webhook show|set|delete <id> …\n\n${lines.join('\n')}\n\n${ENVIRONMENT}`);
    return;
  }
  // no command is a missing argument: exit 2, one line
  if (cmd === undefined) throw new UsageError('mgw: missing a command (mgw --help lists them)');
  const found = select(argv);
  if (!found) {
    if (cmd === 'webhook') throw new UsageError('mgw webhook: missing a subcommand: show, set or delete (usage: mgw webhook show|set|delete <id> …)');
    throw new UsageError(`mgw: unknown command '${cmd}' (mgw --help lists them)`);
  }
  const { verb, rest } = found;
  const parsed = parseArgs(verb, rest);
  if (parsed.help) {
    process.stdout.write(verbUsage(verb));
    return;
  }
  try {
    await verb.run(parsed);
  } catch (err) {
    // a verb's own usage error is worded as the parser's are (found from the outside: "--settings is not valid JSON"
    // alone, where every other one says `mgw <verb>: …` and its usage)
    if (err instanceof UsageError && !/^mgw[ :]/.test(err.message)) throw new UsageError(`mgw ${verb.name}: ${err.message} (usage: ${usageLine(verb)})`);
    throw err;
  }
}

// a reader that stops reading (`mgw instances | head`) ends mgw quietly, as it ends any shell tool (found from the
// outside: a stack trace of the write's EPIPE, and exit 1)
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(typeof process.exitCode === 'number' ? process.exitCode : 0);
    // the output could not be written (a full disk): one line, exit 1, not a stack trace
    if (stream === process.stdout) process.stderr.write(`mgw: the output could not be written (${err.code ?? err.message})\n`);
    process.exit(1);
  });
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err instanceof UsageError ? err.message : `mgw: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(err instanceof UsageError ? 2 : 1);
});
