import { SandboxWaitError, TwinboxApiError, TwinSetWaitError } from '../client/errors.ts';
import { InputError } from '../client/parse.ts';

/** What to change in the workflow for each machine-readable error code the API answers with. */
const FIXES: Record<string, string> = {
  unauthorized: 'Check the `api-key` input: the secret must hold a current Twinbox API key (twinbox_sk_...).',
  unknown_twin: 'Fix the `twins` input.',
  unknown_scenario: 'Fix the `scenario-id` input.',
  no_twins: 'Set the `twins` input (e.g. stripe, github), or a `scenario-id` that names some.',
  invalid_pr_url: 'Fix the `pr-url` input: it must be a pull request of `repo`.',
  plan_limit_exceeded: 'Lower `ttl-minutes`, or upgrade the plan.',
  scm_not_connected: 'Connect GitHub to your Twinbox account, then re-run.',
  invalid_request: 'Fix the inputs named above.',
  not_found: 'Check `api-url`: it must point at the Twinbox API.',
  network_error: 'Check `api-url`, and that Twinbox is reachable from the runner.',
};

/** One line for `core.setFailed`: the API's own `detail`, then what to change in the workflow. */
export function failureMessage(error: unknown, apiUrl: string): string {
  if (error instanceof InputError) return error.message;
  if (error instanceof SandboxWaitError) {
    const hint =
      error.reason === 'timeout'
        ? 'Raise `timeout-minutes`, or read the sandbox logs (`twinbox logs <id>`) for a slow build.'
        : error.reason === 'failed'
          ? 'Read the sandbox logs (`twinbox logs <id>`) for the whole build output.'
          : '';
    return sentences(error.message, hint.replace('<id>', error.sandbox.sandbox_id));
  }
  if (error instanceof TwinSetWaitError) {
    const hint =
      error.reason === 'timeout' || error.reason === 'failed'
        ? `Read what its twins printed: GET /twin-sets/${error.twinSet.id}/logs.`
        : '';
    return sentences(error.message, hint);
  }
  if (error instanceof TwinboxApiError) {
    const code = error.code ?? (error.status === 401 ? 'unauthorized' : undefined);
    const where = error.status ? `Twinbox (${apiUrl}) answered ${error.status}` : 'Twinbox request failed';
    const fix = code ? FIXES[code] : undefined;
    return sentences(`${where}: ${error.detail}`, fix);
  }
  return `Unexpected error: ${error instanceof Error ? error.message : String(error)}`;
}

/** Texts from the API may or may not end in a full stop; the hint after them must read as a sentence. */
function sentences(first: string, second: string | undefined): string {
  if (!second) return first;
  return `${first}${/[.!?]$/.test(first) ? '' : '.'} ${second}`;
}
