import type { CreateSandboxRequest, CreateTwinSetRequest } from '../client/types.ts';
import { InputError, parseEnv, parseList, parsePositiveMinutes, parseWholeMinutes } from '../client/parse.ts';

export { InputError };

/**
 * Defaults of the inputs that have one. action.yml declares the same values (a test keeps the two
 * equal); they are repeated here because `node dist/index.js` outside a runner gets no defaults applied.
 */
export const INPUT_DEFAULTS = {
  mode: 'sandbox',
  wait: 'true',
  'timeout-minutes': '15',
  cleanup: 'true',
} as const;

interface CommonInputs {
  apiKey: string;
  apiUrl: string;
  timeoutMs: number;
}

/** `mode: sandbox` (the default): deploy the branch or pull request with its twins. */
export interface SandboxInputs extends CommonInputs {
  mode: 'sandbox';
  request: CreateSandboxRequest;
  wait: boolean;
}

/**
 * `mode: twins`: twins alone (POST /twin-sets) for the job's own app or tests; their variables are
 * exported to the job's later steps, and the post step deletes them unless `cleanup` is false.
 */
export interface TwinsInputs extends CommonInputs {
  mode: 'twins';
  request: CreateTwinSetRequest;
  cleanup: boolean;
}

export type ActionInputs = SandboxInputs | TwinsInputs;

/** Inputs that name what to deploy: meaningless for twins alone, so refused rather than ignored. */
const SANDBOX_ONLY_INPUTS = ['repo', 'branch', 'pr-url'] as const;

/** What the workflow run tells us about itself (GITHUB_* variables and the event payload). */
export interface RunContext {
  repository?: string;
  eventName?: string;
  refName?: string;
  headRef?: string;
  payload: { pull_request?: { html_url?: string; head?: { ref?: string } } };
}

/** `getInput` returns '' for an absent input, as @actions/core does. */
export function readInputs(getInput: (name: string) => string, context: RunContext): ActionInputs {
  const input = (name: string) =>
    getInput(name).trim() || (INPUT_DEFAULTS as Record<string, string>)[name] || '';
  const apiKey = input('api-key');
  if (!apiKey) throw new InputError('Input `api-key` is required: pass your Twinbox API key from a secret.');
  // Twinbox is self-hosted: there is no hosted API to fall back on, so the workflow names its own.
  const apiUrl = input('api-url');
  if (!apiUrl)
    throw new InputError(
      'Input `api-url` is required: the base URL of your Twinbox, reachable from the runner (e.g. https://twinbox.example.com).',
    );
  if (!/^https?:\/\/[^\s/]/i.test(apiUrl))
    throw new InputError(`Input \`api-url\` must be an http:// or https:// URL, not "${apiUrl}".`);
  const mode = input('mode');
  if (mode !== 'sandbox' && mode !== 'twins')
    throw new InputError(`Input \`mode\` must be sandbox or twins, not "${mode}".`);
  const timeoutMs = parsePositiveMinutes('Input `timeout-minutes`', input('timeout-minutes')) * 60_000;
  const seeding = twinsAndSeed(getInput, input);
  if (mode === 'twins') {
    const named = SANDBOX_ONLY_INPUTS.filter((name) => getInput(name).trim());
    if (named.length)
      throw new InputError(
        `Input${named.length > 1 ? 's' : ''} ${named.map((n) => `\`${n}\``).join(', ')} ` +
          `${named.length > 1 ? 'name' : 'names'} what to deploy; \`mode: twins\` starts twins alone. ` +
          'Remove it, or use `mode: sandbox`.',
      );
    if (!parseBoolean('wait', input('wait')))
      throw new InputError(
        '`mode: twins` always waits: its variables exist only once the twins are ready. Remove `wait: false`.',
      );
    if (!seeding.twins && !seeding.scenario_id && !seeding.scenario_prompt)
      throw new InputError(
        '`mode: twins` needs twins to start: set `twins` (e.g. stripe, github), `scenario-id` or `scenario-prompt`.',
      );
    return {
      mode,
      apiKey,
      apiUrl,
      timeoutMs,
      request: seeding,
      cleanup: parseBoolean('cleanup', input('cleanup')),
    };
  }
  const repo = input('repo') || context.repository || '';
  if (!repo)
    throw new InputError('Input `repo` is empty and GITHUB_REPOSITORY is not set: give `repo: owner/name`.');

  const request: CreateSandboxRequest = {
    repo,
    ...target(input('branch'), input('pr-url'), context),
    ...seeding,
  };
  return { mode, apiKey, apiUrl, request, wait: parseBoolean('wait', input('wait')), timeoutMs };
}

/** The inputs both modes share: twins, seeding, TTL and extra variables. */
function twinsAndSeed(
  getInput: (name: string) => string,
  input: (name: string) => string,
): CreateTwinSetRequest {
  const request: CreateTwinSetRequest = {};
  const twins = parseList(getInput('twins'));
  if (twins.length) request.twins = twins;
  const scenarioId = input('scenario-id');
  if (scenarioId) request.scenario_id = scenarioId;
  const prompt = getInput('scenario-prompt').trim();
  if (prompt) request.scenario_prompt = prompt;
  const ttl = input('ttl-minutes');
  if (ttl) request.ttl_minutes = parseWholeMinutes('Input `ttl-minutes`', ttl);
  const env = parseEnv(getInput('env').split(/\r?\n/), (line) => `Input \`env\`, line ${line}`);
  if (Object.keys(env).length) request.env = env;
  return request;
}

/**
 * Explicit `branch`/`pr-url` win; otherwise the event decides: a pull request deploys its PR (so the
 * sandbox follows the PR head), anything else the ref the workflow runs on.
 */
function target(
  branch: string,
  prUrl: string,
  context: RunContext,
): Pick<CreateSandboxRequest, 'branch' | 'pr_url'> {
  if (branch || prUrl) return { ...(branch && { branch }), ...(prUrl && { pr_url: prUrl }) };
  const pr = context.payload.pull_request;
  if (pr?.html_url) return { pr_url: pr.html_url };
  const ref = context.headRef || context.refName;
  if (ref) return { branch: ref };
  throw new InputError(
    'No branch to deploy: set `branch` or `pr-url`, or run on a push or pull_request event (GITHUB_REF_NAME is empty).',
  );
}

function parseBoolean(name: string, value: string): boolean {
  if (/^(true|yes|on|1)$/i.test(value)) return true;
  if (/^(false|no|off|0)$/i.test(value)) return false;
  throw new InputError(`Input \`${name}\` must be true or false, not "${value}".`);
}
