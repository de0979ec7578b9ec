import { logout, whoami } from './account-commands.ts';
import type { CliContext } from './context.ts';
import { login } from './login.ts';
import { create, get, list, logs, open, remove } from './sandbox-commands.ts';
import { twins } from './twin-commands.ts';

export interface Command {
  run(context: CliContext, args: string[]): Promise<void>;
  /** One line for the overview: what it takes, then what it does. */
  synopsis: string;
  summary: string;
  /** `twinbox <command> --help`: usage, what it does, its own options. */
  help: string;
}

export const COMMON_OPTIONS = `Options for every command:
  --json                Machine-readable output on stdout
  --api-url <url>       Twinbox API (else TWINBOX_API_URL, the saved config, http://127.0.0.1:3000)
  --help, -h            Help (twinbox <command> --help, or twinbox help <command>)`;

export const COMMANDS: Record<string, Command> = {
  login: {
    run: login,
    synopsis: 'login',
    summary: 'Sign in with an e-mail code and save an API key',
    help: `Usage: twinbox login [--email <address>] [--code <code> | --send-code] [--name <key name>]

Signs in with a code mailed to the account's address, creates an API key and saves it, with the API
URL, in the config file (~/.config/twinbox/config.json). Each login makes a new key.

Options:
  --email <address>     The account's e-mail (else asked for)
  --send-code           Mail the code and exit, for scripts; finish with --code
  --code <code>         A code mailed earlier: finish without mailing another
  --name <name>         The API key's name (default "twinbox CLI on <host>")`,
  },
  logout: {
    run: logout,
    synopsis: 'logout',
    summary: 'Revoke the saved API key on Twinbox and forget it',
    help: `Usage: twinbox logout

Revokes the API key saved by \`twinbox login\` on the Twinbox it was made on, and removes it from the
config file. The key is forgotten even when Twinbox cannot be reached; the output says whether it was
revoked. TWINBOX_API_KEY is never touched.`,
  },
  whoami: {
    run: whoami,
    synopsis: 'whoami',
    summary: 'Show the signed-in account: e-mail, plan, token, GitHub login',
    help: `Usage: twinbox whoami

Shows the account the API key in use belongs to: its e-mail, plan, the kind of token and where it came
from, and the connected GitHub login.`,
  },
  create: {
    run: create,
    synopsis: 'create',
    summary: 'Create a sandbox for a branch or pull request (--wait for it)',
    help: `Usage: twinbox create [--repo owner/name] [--branch <name> | --pr-url <url>] [options]

Creates a sandbox. Without --repo, the repository is the current clone's origin remote (a GitHub URL:
https, git@github.com:owner/name or ssh://); without --branch and --pr-url, the checked-out branch.

Options:
  --repo owner/name          The GitHub repository
  --branch <name>            The branch to deploy
  --pr-url <url>             A pull request to deploy (its head)
  --twins a,b                Twins to start (github, stripe, slack); repeatable
  --scenario-id <id>         A scenario to seed the twins with
  --scenario-prompt <text>   Seed the twins from a description instead
  --ttl-minutes <n>          Lifetime in minutes (default 60, capped by your plan)
  --env KEY=VALUE            A variable for the app; repeatable
  --wait                     Wait until the sandbox is ready, showing its progress
  --timeout-minutes <n>      How long --wait waits (default 15; fractions allowed)`,
  },
  get: {
    run: get,
    synopsis: 'get <id>',
    summary: 'Show a sandbox',
    help: `Usage: twinbox get <sandbox-id>

Shows a sandbox: status, the error if it failed, app URL, source, expiry, variable names and twins.
Variable values and the twins' admin token are shown only with --json.`,
  },
  list: {
    run: list,
    synopsis: 'list',
    summary: 'List your sandboxes, newest first',
    help: `Usage: twinbox list [--repo owner/name] [--status <status>] [--limit <n>] [--cursor <c> | --all]

Options:
  --repo owner/name     Only this repository's sandboxes
  --status <status>     queued, building, ready, failed, expired or deleted
  --limit <n>           Sandboxes a page (1-100, default 20)
  --cursor <cursor>     The page after the one that printed this cursor
  --all                 Every page`,
  },
  logs: {
    run: logs,
    synopsis: 'logs <id>',
    summary: "Print a sandbox's install, build and app output (--follow it)",
    help: `Usage: twinbox logs <sandbox-id> [--follow]

Prints what the sandbox's install, build and app printed (the last 1 MiB), as it came.

Options:
  --follow, -f          Keep printing new output as it comes, until the sandbox has ended and its log
                        is complete (or Ctrl-C). With --json, one JSON object a line.`,
  },
  open: {
    run: open,
    synopsis: 'open <id>',
    summary: "Open a sandbox's app (or --page, its web page) in the browser",
    help: `Usage: twinbox open <sandbox-id> [--page] [--print]

Opens the sandbox's app in the browser (xdg-open, open or start), and prints its URL.

Options:
  --page                The sandbox's page in the web app (<api-url>/dashboard/sandboxes/<id>) instead
  --print               Only print the URL; open nothing`,
  },
  delete: {
    run: remove,
    synopsis: 'delete <id>',
    summary: 'Delete a sandbox now',
    help: `Usage: twinbox delete <sandbox-id>

Ends the sandbox now: its app and twins stop. The record stays, with status deleted.`,
  },
  twins: {
    run: twins,
    synopsis: 'twins <subcommand>',
    summary: 'Twins alone, no repository: for an app on your machine or a CI job',
    help: `Usage: twinbox twins create --twins stripe,github [options]
       twinbox twins get|env|delete <twin-set-id>
       twinbox twins list [--status <status>] [--limit <n>] [--cursor <c>]

A twin set is twins with no repository or app (POST /twin-sets): their public URLs, admin API and
variables, for an app you run yourself. It lives for its TTL, like a sandbox, and counts against the
same plan quota.

  create      Start twins and wait until they are ready (seconds). Shows the set; with --export,
              prints only export NAME='value' lines (eval "$(twinbox twins create ... --export)"),
              with --dotenv a .env file. Either also sets TWINBOX_TWIN_SET_ID.
  get <id>    Show a twin set (variable names only; values with --json)
  env <id>    Print its variables again: export lines, or --dotenv
  list        Your twin sets, newest first
  delete <id> Stop its twins now

Options of create:
  --twins a,b                Twins to start (see GET /twins); repeatable
  --scenario-id <id>         A scenario to seed the twins with (names the twins when --twins is absent)
  --scenario-prompt <text>   Seed the twins from a description instead
  --ttl-minutes <n>          Lifetime in minutes (default 60, capped by your plan)
  --env KEY=VALUE            An extra variable laid over the twins' own; repeatable
  --export | --dotenv        Print the variables as lines to evaluate or to save
  --no-wait                  Return at once (queued, no variables yet)
  --timeout-minutes <n>      How long to wait for ready (default 5; fractions allowed)`,
  },
};

export function overview(): string {
  const width =
    Math.max('help <command>'.length, ...Object.values(COMMANDS).map((c) => c.synopsis.length)) + 2;
  const lines = Object.values(COMMANDS).map((c) => `  ${c.synopsis.padEnd(width)}${c.summary}`);
  return `Usage: twinbox <command> [options]

Commands:
${lines.join('\n')}
  ${'help <command>'.padEnd(width)}A command's options

${COMMON_OPTIONS}
  --version, -V         The CLI's version

TWINBOX_API_KEY overrides the key saved by \`twinbox login\`. Exit codes: docs/cli.md.`;
}
