import type { CreateSandboxRequest } from '../client/types.ts';
import { InputError, parseEnv, parseList, parsePositiveMinutes, parseWholeMinutes } from '../client/parse.ts';

export { InputError };

/**
 * Defaults of the inputs that have one. action.yml declares the same values (a test keeps the two
 * equal); they are repeated here because `node dist/index.js` outside a runner gets no defaults applied.
 */
export const INPUT_DEFAULTS = {
  wait: 'true',
  'timeout-minutes': '15',
} as const;

export interface ActionInputs {
  apiKey: string;
  apiUrl: string;
  request: CreateSandboxRequest;
  wait: boolean;
  timeoutMs: number;
}

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
  const repo = input('repo') || context.repository || '';
  if (!repo)
    throw new InputError('Input `repo` is empty and GITHUB_REPOSITORY is not set: give `repo: owner/name`.');

  const request: CreateSandboxRequest = { repo, ...target(input('branch'), input('pr-url'), context) };
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

  return {
    apiKey,
    apiUrl,
    request,
    wait: parseBoolean('wait', input('wait')),
    timeoutMs: parsePositiveMinutes('Input `timeout-minutes`', input('timeout-minutes')) * 60_000,
  };
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
