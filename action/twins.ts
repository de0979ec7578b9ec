import * as core from '@actions/core';
import { TwinboxClient, formatDuration } from '../client/client.ts';
import type { TwinSet } from '../client/types.ts';
import type { TwinsInputs } from './inputs.ts';
import { maskValue } from './mask.ts';
import { failureMessage } from './messages.ts';
import { writeTwinSetSummary } from './summary.ts';

/** The variable naming the twin set in later steps, for a `twinbox twins delete` of their own. */
export const TWIN_SET_ID_VARIABLE = 'TWINBOX_TWIN_SET_ID';

/** Saved for the post step (core.saveState): what to delete there, and where. */
const STATE = { id: 'twin-set-id', cleanup: 'cleanup', apiUrl: 'api-url' } as const;

/**
 * `mode: twins`: POST /twin-sets, wait until ready, then export every variable to the job's later steps
 * (core.exportVariable), each secret masked first. The post step (post()) deletes the set.
 */
export async function startTwins(inputs: TwinsInputs): Promise<void> {
  const client = new TwinboxClient({
    baseUrl: inputs.apiUrl,
    apiKey: inputs.apiKey,
    userAgent: 'twinbox-action',
  });
  const names = inputs.request.twins?.join(', ') ?? "the scenario's twins";
  core.info(`Starting twins alone (${names}) on ${client.baseUrl}`);
  let set = await client.createTwinSet(inputs.request);
  // Saved at once, so the post step deletes the set even when the wait below fails.
  core.saveState(STATE.id, set.id);
  core.saveState(STATE.cleanup, String(inputs.cleanup));
  core.saveState(STATE.apiUrl, inputs.apiUrl);
  core.setOutput('twin-set-id', set.id);
  core.info(`Twin set ${set.id} is ${set.status}; it expires at ${set.expires_at}.`);
  if (set.status !== 'ready') {
    core.info(`Waiting up to ${formatDuration(inputs.timeoutMs)} for its twins...`);
    set = await client.waitUntilTwinSetReady(set.id, {
      timeoutMs: inputs.timeoutMs,
      onProgress: (current, elapsedMs) => core.info(`  ${formatDuration(elapsedMs)}: ${current.status}`),
    });
  }
  await reportTwinSet(set, true);
  const exported = Object.keys(set.env_vars).sort();
  core.info(
    `Ready. Exported to the job's later steps: ${[...exported, TWIN_SET_ID_VARIABLE].join(', ')}` +
      (inputs.cleanup
        ? '. The post step deletes the twins.'
        : `. Delete them with DELETE /twin-sets/${set.id}.`),
  );
}

/** Outputs and summary for the set as last seen; with `exportVariables`, its variables for later steps. */
export async function reportTwinSet(set: TwinSet, exportVariables: boolean): Promise<void> {
  maskTwinSet(set);
  core.setOutput('twin-set-id', set.id);
  core.setOutput('status', set.status);
  core.setOutput('twins', JSON.stringify(set.twins));
  core.setOutput('env-vars', JSON.stringify(set.env_vars));
  if (exportVariables) {
    for (const [name, value] of Object.entries(set.env_vars)) core.exportVariable(name, value);
    core.exportVariable(TWIN_SET_ID_VARIABLE, set.id);
  }
  try {
    await writeTwinSetSummary(core.summary, set);
  } catch (error) {
    core.warning(`Could not write the job summary: ${(error as Error).message}`);
  }
}

/**
 * Every value but the twins' public addresses is masked: tokens, keys and secrets, and the caller's
 * `env`. An address (a URL, its host, port or scheme) is no secret, is shown in the summary anyway, and
 * masking `http` or a port number would garble every later log line.
 */
function maskTwinSet(set: TwinSet): void {
  maskValue(set.twin_admin_token);
  const addresses = publicAddresses(set);
  const isAddress = (value: string) =>
    addresses.has(value) || (URL.canParse(value) && addresses.has(new URL(value).origin));
  for (const value of Object.values(set.env_vars)) if (!isAddress(value)) maskValue(value);
  for (const twin of Object.values(set.twins))
    for (const value of Object.values(twin.env_vars)) if (!isAddress(value)) maskValue(value);
}

function publicAddresses(set: TwinSet): Set<string> {
  const parts = new Set<string>();
  for (const twin of Object.values(set.twins))
    for (const url of [twin.base_url, twin.admin_url]) {
      const parsed = new URL(url);
      for (const part of [
        url,
        parsed.origin,
        parsed.host,
        parsed.hostname,
        parsed.port,
        parsed.protocol.slice(0, -1),
      ])
        if (part) parts.add(part);
    }
  return parts;
}

/**
 * The post step (action.yml `post`, run with `post-if: always()`): deletes the twin set the main step
 * started, unless `cleanup: false`. A failure here is a warning: the set still ends at its TTL.
 */
export async function post(): Promise<void> {
  const id = core.getState(STATE.id);
  if (!id) return;
  if (core.getState(STATE.cleanup) !== 'true') {
    core.info(
      `Keeping twin set ${id} (cleanup: false): it ends at its TTL, or with DELETE /twin-sets/${id}.`,
    );
    return;
  }
  const apiKey = core.getInput('api-key').trim();
  if (apiKey) core.setSecret(apiKey);
  const apiUrl = core.getState(STATE.apiUrl);
  const client = new TwinboxClient({ baseUrl: apiUrl, apiKey, userAgent: 'twinbox-action' });
  try {
    const set = await client.deleteTwinSet(id);
    core.info(`Deleted twin set ${id} (status: ${set.status}).`);
  } catch (error) {
    core.warning(`Could not delete twin set ${id}: ${failureMessage(error, apiUrl)} It ends at its TTL.`);
  }
}
