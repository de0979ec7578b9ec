import { parseArgs } from 'node:util';
import type { CreateTwinSetRequest, SandboxStatus, TwinSet } from '../types.ts';
import { InputError, parseEnv, parseList, parsePositiveMinutes, parseWholeMinutes } from '../parse.ts';
import { authenticatedClient, print, printJson, type CliContext } from './context.ts';
import { table } from './format.ts';

const DEFAULT_TIMEOUT_MINUTES = '5';

/** The variable the printed lines also set, so that `twinbox twins delete "$TWINBOX_TWIN_SET_ID"` works. */
export const TWIN_SET_ID_VARIABLE = 'TWINBOX_TWIN_SET_ID';

type Format = 'export' | 'dotenv';

const FORMAT_OPTIONS = {
  export: { type: 'boolean', default: false },
  dotenv: { type: 'boolean', default: false },
} as const;

/** `twinbox twins <subcommand>`: twins alone, for an app on this machine or a CI job (docs/cli.md). */
export async function twins(context: CliContext, args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  const run = sub && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub] : undefined;
  if (!run)
    throw new InputError(
      sub
        ? `Unknown subcommand "twins ${sub}": use create, get, env, list or delete.`
        : 'Usage: twinbox twins <create|get|env|list|delete> [options]',
    );
  await run(context, rest);
}

const SUBCOMMANDS: Record<string, (context: CliContext, args: string[]) => Promise<void>> = {
  create,
  get,
  env,
  list,
  delete: remove,
};

/**
 * Starts the twins and waits until they are ready (their variables exist only then). With --export or
 * --dotenv stdout holds only the variable lines, for `eval "$(...)"` or a `.env` file; the rest goes to
 * stderr.
 */
async function create(context: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      twins: { type: 'string', multiple: true },
      'scenario-id': { type: 'string' },
      'scenario-prompt': { type: 'string' },
      'ttl-minutes': { type: 'string' },
      env: { type: 'string', multiple: true },
      'no-wait': { type: 'boolean', default: false },
      'timeout-minutes': { type: 'string', default: DEFAULT_TIMEOUT_MINUTES },
      ...FORMAT_OPTIONS,
    },
  });
  const format = formatOf(values);
  if (format && values['no-wait'])
    throw new InputError(`--${format} needs the variables, which exist only once ready: drop --no-wait.`);
  const request: CreateTwinSetRequest = {};
  const names = parseList((values.twins ?? []).join(','));
  if (names.length) request.twins = names;
  if (values['scenario-id']) request.scenario_id = values['scenario-id'];
  if (values['scenario-prompt']) request.scenario_prompt = values['scenario-prompt'];
  if (values['ttl-minutes']) request.ttl_minutes = parseWholeMinutes('--ttl-minutes', values['ttl-minutes']);
  const extra = parseEnv(values.env ?? [], (n) => `--env number ${n}`);
  if (Object.keys(extra).length) request.env = extra;
  if (!request.twins && !request.scenario_id && !request.scenario_prompt)
    throw new InputError('Name the twins: --twins stripe,github (or --scenario-id / --scenario-prompt).');
  const timeoutMs = parsePositiveMinutes('--timeout-minutes', values['timeout-minutes']) * 60_000;

  const { client } = await authenticatedClient(context);
  let set = await client.createTwinSet(request);
  if (!values['no-wait'] && set.status !== 'ready') {
    if (!context.json) context.stderr.write(`Created twin set ${set.id}; starting its twins...\n`);
    set = await client.waitUntilTwinSetReady(set.id, { timeoutMs });
  }
  show(context, set, format);
}

async function get(context: CliContext, args: string[]): Promise<void> {
  const { client } = await authenticatedClient(context);
  show(context, await client.getTwinSet(onlyId(args, 'get')), undefined);
}

/** The variables again, as lines to paste: `export` lines by default here, or a .env file. */
async function env(context: CliContext, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: FORMAT_OPTIONS });
  const id = onlyId(positionals, 'env');
  const { client } = await authenticatedClient(context);
  const set = await client.getTwinSet(id);
  if (set.status !== 'ready')
    throw new InputError(`Twin set ${id} is ${set.status}: only a ready twin set has variables.`);
  show(context, set, formatOf(values) ?? 'export');
}

async function list(context: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { status: { type: 'string' }, limit: { type: 'string' }, cursor: { type: 'string' } },
  });
  if (values.limit !== undefined && !/^\d+$/.test(values.limit))
    throw new InputError(`--limit must be a whole number, not "${values.limit}".`);
  const { client } = await authenticatedClient(context);
  const page = await client.listTwinSets({
    status: values.status as SandboxStatus | undefined,
    limit: values.limit === undefined ? undefined : Number(values.limit),
    cursor: values.cursor,
  });
  if (context.json) return printJson(context, page);
  if (!page.twin_sets.length) print(context, 'No twin sets.');
  else
    print(
      context,
      table([
        ['ID', 'STATUS', 'TWINS', 'EXPIRES'],
        ...page.twin_sets.map((s) => [s.id, s.status, s.twin_names.join(','), s.expires_at]),
      ]).join('\n'),
    );
  if (page.next_cursor) print(context, `More: twinbox twins list --cursor ${page.next_cursor}`);
}

async function remove(context: CliContext, args: string[]): Promise<void> {
  const { client } = await authenticatedClient(context);
  const set = await client.deleteTwinSet(onlyId(args, 'delete'));
  if (context.json) printJson(context, set);
  else print(context, `Deleted twin set ${set.id} (status: ${set.status}).`);
}

function show(context: CliContext, set: TwinSet, format: Format | undefined): void {
  if (format) {
    context.stdout.write(variableLines({ ...set.env_vars, [TWIN_SET_ID_VARIABLE]: set.id }, format));
    if (!context.json)
      context.stderr.write(`Twin set ${set.id} is ${set.status}; expires ${set.expires_at}.\n`);
    return;
  }
  if (context.json) return printJson(context, set);
  print(context, formatTwinSet(set));
}

/**
 * Human output, like `twinbox get`: variable names, never their values (secrets in scrollback); the
 * values come with --export, --dotenv or --json.
 */
export function formatTwinSet(set: TwinSet): string {
  const rows: string[][] = [
    ['Twin set:', set.id],
    ['Status:', set.status],
  ];
  if (set.error) rows.push(['Error:', set.error]);
  rows.push(['Expires:', `${set.expires_at} (TTL ${set.ttl_minutes} min)`]);
  const names = Object.keys(set.env_vars).sort();
  if (names.length) rows.push(['Variables:', names.join(', ')]);
  const lines = table(rows);
  const entries = Object.entries(set.twins);
  if (entries.length) {
    lines.push('Twins:', ...table(entries.map(([name, twin]) => [`  ${name}`, twin.base_url])));
    lines.push(`Variables to paste: twinbox twins env ${set.id}`);
  }
  return lines.join('\n');
}

/**
 * `export NAME='value'` lines a POSIX shell evaluates back to the exact values (a single quote inside is
 * closed, escaped and reopened), or `.env` lines (dotenvValue).
 */
export function variableLines(vars: Record<string, string>, format: Format): string {
  return Object.keys(vars)
    .sort()
    .map((name) => {
      const value = vars[name]!;
      if (format === 'export') return `export ${name}='${value.replace(/'/g, `'\\''`)}'\n`;
      return `${name}=${dotenvValue(name, value)}\n`;
    })
    .join('');
}

/**
 * A value as the .env readers agree on it (Node's --env-file, python-dotenv, docker compose): plain when
 * it is, else single-quoted (read literally), else double-quoted with newlines as `\n` (a PEM key) when
 * nothing in it would be expanded. A value that fits none is refused rather than written to be misread.
 */
function dotenvValue(name: string, value: string): string {
  if (/^[A-Za-z0-9_./:@%+,-]*$/.test(value)) return value;
  if (!/['\r\n]/.test(value)) return `'${value}'`;
  if (!/["\\$`\r]/.test(value)) return `"${value.replace(/\n/g, '\\n')}"`;
  throw new InputError(
    `The value of ${name} cannot be written to a .env file so that every reader reads it back (it has ` +
      'both kinds of quotes, or a newline beside a quote, backslash or $): use --export or --json.',
  );
}

function formatOf(values: { export?: boolean; dotenv?: boolean }): Format | undefined {
  if (values.export && values.dotenv) throw new InputError('Give --export or --dotenv, not both.');
  return values.export ? 'export' : values.dotenv ? 'dotenv' : undefined;
}

function onlyId(args: string[], command: string): string {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1)
    throw new InputError(`Usage: twinbox twins ${command} <twin-set-id> (see twinbox twins --help)`);
  return positionals[0]!;
}
