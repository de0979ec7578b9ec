// The `twinbox` command (bundled to dist/cli.js, package.json "bin"). Usage and exit codes: docs/cli.md.
import { parseArgs } from 'node:util';
import { SandboxWaitError, TwinboxApiError, TwinSetWaitError } from './errors.ts';
import { COMMANDS, COMMON_OPTIONS, overview } from './cli/commands.ts';
import { type CliContext } from './cli/context.ts';
import { EXIT, exitCodeOf } from './cli/exit-codes.ts';
import { cliVersion } from './cli/version.ts';

const GLOBAL_OPTIONS = {
  json: { type: 'boolean' },
  'api-url': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

/** Splits the global flags from the command's own, runs it, and maps the outcome to an exit code. */
export async function main(argv: string[]): Promise<number> {
  const { values, tokens } = parseArgs({
    args: argv,
    options: GLOBAL_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  // The command's own arguments: everything but the global flags (those may come anywhere).
  const rest: string[] = [];
  for (const token of tokens) {
    if (token.kind === 'option' && Object.hasOwn(GLOBAL_OPTIONS, token.name)) continue;
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
  if (values.version) {
    if (context.json) context.stdout.write(`${JSON.stringify({ version: cliVersion() })}\n`);
    else context.stdout.write(`twinbox ${cliVersion()}\n`);
    return EXIT.ok;
  }
  // `twinbox help <command>` is `twinbox <command> --help`.
  const helpWanted = values.help === true || name === 'help';
  const topic = name === 'help' ? args[0] : name;
  if (!topic) {
    (helpWanted ? process.stdout : process.stderr).write(`${overview()}\n`);
    return helpWanted ? EXIT.ok : EXIT.usage;
  }
  const command = Object.hasOwn(COMMANDS, topic) ? COMMANDS[topic] : undefined;
  if (!command) {
    process.stderr.write(`Unknown command "${topic}".\n\n${overview()}\n`);
    return EXIT.usage;
  }
  if (helpWanted) {
    process.stdout.write(`${command.help}\n\n${COMMON_OPTIONS}\n`);
    return EXIT.ok;
  }
  try {
    await command.run(context, args);
    return EXIT.ok;
  } catch (error) {
    const code = exitCodeOf(error);
    reportError(context, error, code, topic);
    return code;
  }
}

/** stderr always gets the message; with --json, stdout also gets it as JSON for scripts. */
function reportError(context: CliContext, error: unknown, code: number, command: string): void {
  const message = error instanceof Error ? error.message : String(error);
  const detail = error instanceof TwinboxApiError ? error.detail : message;
  const hint =
    code === EXIT.auth && error instanceof TwinboxApiError
      ? ' Run `twinbox login`, or check TWINBOX_API_KEY.'
      : code === EXIT.usage && !(error instanceof TwinboxApiError) && !message.includes('--help')
        ? ` (see \`twinbox ${command} --help\`)`
        : '';
  context.stderr.write(`twinbox: ${message}${hint}\n`);
  if (!context.json) return;
  const body: Record<string, unknown> = { error: detail, exit_code: code };
  if (error instanceof TwinboxApiError) Object.assign(body, { status: error.status, code: error.code });
  if (error instanceof SandboxWaitError)
    Object.assign(body, { reason: error.reason, sandbox: error.sandbox });
  if (error instanceof TwinSetWaitError)
    Object.assign(body, { reason: error.reason, twin_set: error.twinSet });
  context.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
}

process.exitCode = await main(process.argv.slice(2));
