// The `twinbox` command (bundled to dist/cli.js, package.json "bin"). Usage and exit codes: docs/cli.md.
import { parseArgs } from 'node:util';
import { SandboxWaitError, TwinboxApiError } from './errors.ts';
import { type CliContext } from './cli/context.ts';
import { EXIT, exitCodeOf } from './cli/exit-codes.ts';
import { login } from './cli/login.ts';
import { create, get, list, logs, remove } from './cli/sandbox-commands.ts';

const USAGE = `Usage: twinbox <command> [options]

Commands:
  login                 Sign in with an e-mail code and save an API key (--email, --code, --send-code, --name)
  create                Create a sandbox (--repo, --branch | --pr-url, --twins, --scenario-id,
                        --scenario-prompt, --ttl-minutes, --env KEY=VALUE..., --wait, --timeout-minutes)
  get <id>              Show a sandbox
  list                  List your sandboxes (--repo, --status, --limit, --cursor, --all)
  logs <id>             Print a sandbox's install, build and app output
  delete <id>           Delete a sandbox now

Options for every command:
  --json                Machine-readable output on stdout
  --api-url <url>       Twinbox API (else TWINBOX_API_URL, the saved config, https://api.twinbox.dev)
  --help                This text

TWINBOX_API_KEY overrides the key saved by \`twinbox login\`.`;

const COMMANDS: Record<string, (context: CliContext, args: string[]) => Promise<void>> = {
  login,
  create,
  get,
  list,
  logs,
  delete: remove,
};

/** Splits the global flags from the command's own, runs it, and maps the outcome to an exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values, tokens } = parseArgs({
    args: argv,
    options: { json: { type: 'boolean' }, 'api-url': { type: 'string' }, help: { type: 'boolean' } },
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  // The command's own arguments: everything but the global flags (those may come anywhere).
  const global = new Set(['json', 'api-url', 'help']);
  const rest: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'option' && global.has(token.name)) continue;
    if (token.kind === 'option') {
      rest.push(token.rawName);
      if (token.value !== undefined) rest.push(token.value);
    } else if (token.kind === 'positional') rest.push(token.value);
    else rest.push('--');
  }
  const [name, ...args] = rest;
  const context: CliContext = {
    stdout: process.stdout,
    stderr: process.stderr,
    json: values.json === true,
    apiUrlFlag: typeof values['api-url'] === 'string' ? values['api-url'] : undefined,
  };
  if (values.help || !name) {
    (values.help ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`Unknown command "${name}".\n\n${USAGE}\n`);
    return EXIT.usage;
  }
  try {
    await command(context, args);
    return EXIT.ok;
  } catch (error) {
    const code = exitCodeOf(error);
    reportError(context, error, code);
    return code;
  }
}

/** stderr always gets the message; with --json, stdout also gets it as JSON for scripts. */
function reportError(context: CliContext, error: unknown, code: number): void {
  const message = error instanceof Error ? error.message : String(error);
  const detail = error instanceof TwinboxApiError ? error.detail : message;
  const hint =
    code === EXIT.auth && error instanceof TwinboxApiError
      ? ' Run `twinbox login`, or check TWINBOX_API_KEY.'
      : code === EXIT.usage && !(error instanceof TwinboxApiError)
        ? ' (see `twinbox --help`)'
        : '';
  context.stderr.write(`twinbox: ${message}${hint}\n`);
  if (!context.json) return;
  const body: Record<string, unknown> = { error: detail, exit_code: code };
  if (error instanceof TwinboxApiError) Object.assign(body, { status: error.status, code: error.code });
  if (error instanceof SandboxWaitError)
    Object.assign(body, { reason: error.reason, sandbox: error.sandbox });
  context.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
}

process.exitCode = await main(process.argv.slice(2));
