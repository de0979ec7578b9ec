import { parseArgs } from 'node:util';
import type { CreateSandboxRequest, Sandbox, SandboxStatus } from '../types.ts';
import { InputError, parseEnv, parseList, parsePositiveMinutes, parseWholeMinutes } from '../parse.ts';
import { resolveSettings } from './config.ts';
import { authenticatedClient, print, printJson, type CliContext } from './context.ts';
import { CliError, EXIT } from './exit-codes.ts';
import { formatSandbox, formatSandboxList } from './format.ts';
import { currentBranch, originRepository } from './git.ts';
import { openInBrowser } from './open-url.ts';
import { ProgressDisplay } from './progress.ts';

const DEFAULT_TIMEOUT_MINUTES = '15';

/** `twinbox create`: the Action's inputs as flags; repo and branch default to the current checkout. */
export async function create(context: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      repo: { type: 'string' },
      branch: { type: 'string' },
      'pr-url': { type: 'string' },
      twins: { type: 'string', multiple: true },
      'scenario-id': { type: 'string' },
      'scenario-prompt': { type: 'string' },
      'ttl-minutes': { type: 'string' },
      env: { type: 'string', multiple: true },
      wait: { type: 'boolean', default: false },
      'timeout-minutes': { type: 'string', default: DEFAULT_TIMEOUT_MINUTES },
    },
  });
  const settings = await resolveSettings(context.apiUrlFlag);
  const repo = values.repo ?? originRepository(settings.githubHosts);
  if (!repo)
    throw new InputError(
      'No repository: give --repo owner/name (or run inside a clone with an origin remote).',
    );
  const request: CreateSandboxRequest = { repo };
  if (values.branch) request.branch = values.branch;
  if (values['pr-url']) request.pr_url = values['pr-url'];
  if (!request.branch && !request.pr_url) {
    const branch = currentBranch();
    if (!branch)
      throw new InputError('No branch: give --branch or --pr-url (or run inside a clone on a branch).');
    request.branch = branch;
  }
  const twins = parseList((values.twins ?? []).join(','));
  if (twins.length) request.twins = twins;
  if (values['scenario-id']) request.scenario_id = values['scenario-id'];
  if (values['scenario-prompt']) request.scenario_prompt = values['scenario-prompt'];
  if (values['ttl-minutes']) request.ttl_minutes = parseWholeMinutes('--ttl-minutes', values['ttl-minutes']);
  const env = parseEnv(values.env ?? [], (n) => `--env number ${n}`);
  if (Object.keys(env).length) request.env = env;
  const timeoutMs = parsePositiveMinutes('--timeout-minutes', values['timeout-minutes']) * 60_000;

  const { client } = await authenticatedClient(context);
  let sandbox = await client.createSandbox(request);
  if (values.wait && sandbox.status !== 'ready') {
    if (!context.json)
      context.stderr.write(`Created sandbox ${sandbox.sandbox_id}; waiting for it to be ready...\n`);
    const progress = new ProgressDisplay(context.stderr);
    try {
      sandbox = await client.waitUntilReady(sandbox.sandbox_id, {
        timeoutMs,
        onProgress: (current, elapsed) => progress.update(current, elapsed),
      });
    } finally {
      progress.done();
    }
  }
  if (context.json) printJson(context, sandbox);
  else print(context, formatSandbox(sandbox));
}

export async function get(context: CliContext, args: string[]): Promise<void> {
  const id = onlyId(args, 'get');
  const { client } = await authenticatedClient(context);
  const sandbox = await client.getSandbox(id);
  if (context.json) printJson(context, sandbox);
  else print(context, formatSandbox(sandbox));
}

/** One page by default (with the cursor of the next); `--all` follows every cursor. */
export async function list(context: CliContext, args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      repo: { type: 'string' },
      status: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      all: { type: 'boolean', default: false },
    },
  });
  if (values.limit !== undefined && !/^\d+$/.test(values.limit)) {
    throw new InputError(`--limit must be a whole number, not "${values.limit}".`);
  }
  const query = {
    repo: values.repo,
    status: values.status as SandboxStatus | undefined,
    limit: values.limit === undefined ? undefined : Number(values.limit),
  };
  const { client } = await authenticatedClient(context);
  if (values.all) {
    const sandboxes = [];
    for await (const sandbox of client.allSandboxes(query)) sandboxes.push(sandbox);
    if (context.json) printJson(context, { sandboxes, next_cursor: null });
    else print(context, formatSandboxList(sandboxes));
    return;
  }
  const page = await client.listSandboxes({ ...query, cursor: values.cursor });
  if (context.json) return printJson(context, page);
  print(context, formatSandboxList(page.sandboxes));
  if (page.next_cursor) print(context, `More: twinbox list --cursor ${page.next_cursor}`);
}

/**
 * The raw log text, as it came, so it can be piped to grep/less. `--follow` polls for what is new, by
 * offset (docs/cli.md says why polling), until the sandbox has ended and its log is complete.
 */
export async function logs(context: CliContext, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { follow: { type: 'boolean', short: 'f', default: false } },
  });
  const id = onlyId(positionals, 'logs');
  const { client } = await authenticatedClient(context);
  if (!values.follow) {
    const text = await client.sandboxLogs(id);
    if (context.json) printJson(context, { sandbox_id: id, logs: text });
    else if (text) context.stdout.write(text);
    return;
  }
  // Fails early, with the API's 404, on an id that is not one of ours.
  await client.getSandbox(id);
  for await (const chunk of client.followSandboxLogs(id)) {
    if (chunk.gap > 0)
      note(
        context,
        `${chunk.gap} bytes of output were dropped here (Twinbox keeps only the newest part of a log, 1 MiB by default)`,
      );
    if (chunk.gap < 0) note(context, 'the log starts over here (Twinbox restarted)');
    if (context.json) {
      if (chunk.text || chunk.complete)
        context.stdout.write(
          `${JSON.stringify({ sandbox_id: id, text: chunk.text, start: chunk.start, next: chunk.next, complete: chunk.complete })}\n`,
        );
    } else if (chunk.text) context.stdout.write(chunk.text);
  }
  const sandbox = await client.getSandbox(id);
  if (!context.json)
    context.stderr.write(`[twinbox] sandbox ${id} ${endedAs(sandbox)}: the log is complete.\n`);
}

function note(context: CliContext, text: string): void {
  context.stderr.write(`[twinbox] ${text}\n`);
}

function endedAs(sandbox: Sandbox): string {
  switch (sandbox.status) {
    case 'failed':
      return `failed (${sandbox.error ?? 'no reason given'})`;
    case 'expired':
      return 'expired';
    case 'deleted':
      return 'was deleted';
    default:
      return `is ${sandbox.status}`;
  }
}

/**
 * `twinbox open`: the app, or with `--page` the sandbox's page in the web app, in the browser. The URL
 * is always printed, so it works over ssh and in scripts; `--print` opens nothing.
 */
export async function open(context: CliContext, args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { page: { type: 'boolean', default: false }, print: { type: 'boolean', default: false } },
  });
  const id = onlyId(positionals, 'open');
  const { client, settings } = await authenticatedClient(context);
  const sandbox = await client.getSandbox(id);
  const pageUrl = `${settings.apiUrl.replace(/\/+$/, '')}/dashboard/sandboxes/${encodeURIComponent(sandbox.sandbox_id)}`;
  let url = pageUrl;
  if (!values.page) {
    if (sandbox.status !== 'ready' || !sandbox.app_url) {
      const why =
        sandbox.status === 'queued' || sandbox.status === 'building'
          ? `has no app yet (status: ${sandbox.status})`
          : `${endedAs(sandbox)}: its app is gone`;
      throw new CliError(
        `Sandbox ${id} ${why}. Its page: ${pageUrl} (twinbox open --page ${id})`,
        ['queued', 'building'].includes(sandbox.status) ? EXIT.rejected : EXIT.sandboxEnded,
      );
    }
    url = sandbox.app_url;
  }
  const opener = values.print ? undefined : await openInBrowser(url);
  if (context.json) printJson(context, { url, opened_with: opener?.command ?? null });
  else print(context, url);
  if (values.print || context.json) return;
  if (opener?.command) context.stderr.write(`Opened in your browser (${opener.command}).\n`);
  else context.stderr.write(`Could not open a browser (${opener?.problem}): open the URL above yourself.\n`);
}

export async function remove(context: CliContext, args: string[]): Promise<void> {
  const id = onlyId(args, 'delete');
  const { client } = await authenticatedClient(context);
  const sandbox = await client.deleteSandbox(id);
  if (context.json) printJson(context, sandbox);
  else print(context, `Deleted sandbox ${sandbox.sandbox_id} (status: ${sandbox.status}).`);
}

/** The one sandbox id of a command; `args` are its positionals when the command has options. */
function onlyId(args: string[], command: string): string {
  const { positionals } = parseArgs({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1)
    throw new InputError(`Usage: twinbox ${command} <sandbox-id> (see twinbox ${command} --help)`);
  return positionals[0]!;
}
