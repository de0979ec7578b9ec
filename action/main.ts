import * as core from '@actions/core';
import { context } from '@actions/github';
import { TwinboxClient, formatDuration } from '../client/client.ts';
import { SandboxWaitError, TwinSetWaitError } from '../client/errors.ts';
import type { Sandbox, SandboxStatus } from '../client/types.ts';
import { readInputs, type ActionInputs, type SandboxInputs } from './inputs.ts';
import { failureMessage } from './messages.ts';
import { writeSummary } from './summary.ts';
import { reportTwinSet, startTwins } from './twins.ts';
import { maskValue } from './mask.ts';

/**
 * The Action: inputs -> POST /sandboxes -> (wait for ready) -> outputs and job summary. Every failure
 * ends in `core.setFailed` with a message naming what to fix; nothing throws out of here.
 */
export async function run(): Promise<void> {
  // Masked before anything else can print it, including an input error's message.
  const rawKey = core.getInput('api-key').trim();
  if (rawKey) core.setSecret(rawKey);
  let inputs: ActionInputs | undefined;
  try {
    inputs = readInputs(core.getInput, {
      repository: process.env.GITHUB_REPOSITORY,
      eventName: context.eventName,
      refName: process.env.GITHUB_REF_NAME,
      headRef: process.env.GITHUB_HEAD_REF,
      payload: context.payload,
    });
    for (const value of Object.values(inputs.request.env ?? {})) maskValue(value);
    if (inputs.mode === 'twins') await startTwins(inputs);
    else await deploy(inputs);
  } catch (error) {
    if (error instanceof SandboxWaitError) await report(error.sandbox);
    if (error instanceof TwinSetWaitError) await reportTwinSet(error.twinSet, false);
    core.setFailed(failureMessage(error, inputs?.apiUrl ?? ''));
  }
}

async function deploy(inputs: SandboxInputs): Promise<void> {
  const client = new TwinboxClient({
    baseUrl: inputs.apiUrl,
    apiKey: inputs.apiKey,
    userAgent: 'twinbox-action',
  });
  const target = inputs.request.pr_url ?? inputs.request.branch;
  core.info(`Creating a sandbox of ${inputs.request.repo} (${target}) on ${client.baseUrl}`);
  let sandbox = await client.createSandbox(inputs.request);
  // Set at once, so a cleanup step can delete the sandbox even when the wait below fails.
  core.setOutput('sandbox-id', sandbox.sandbox_id);
  core.info(`Sandbox ${sandbox.sandbox_id} is ${sandbox.status}; it expires at ${sandbox.expires_at}.`);
  if (inputs.wait && sandbox.status !== 'ready') {
    let lastStatus: SandboxStatus = sandbox.status;
    core.info(`Waiting up to ${formatDuration(inputs.timeoutMs)} for it to be ready...`);
    sandbox = await client.waitUntilReady(sandbox.sandbox_id, {
      timeoutMs: inputs.timeoutMs,
      onProgress: (current, elapsedMs) => {
        // One line per poll shows the job is alive; a status change is worth saying as such.
        const change = current.status !== lastStatus ? ` (was ${lastStatus})` : '';
        core.info(`  ${formatDuration(elapsedMs)}: ${current.status}${change}`);
        lastStatus = current.status;
      },
    });
  }
  await report(sandbox);
  if (sandbox.status === 'ready') core.info(`Ready: ${sandbox.app_url}`);
}

/** Outputs and summary for the sandbox as last seen, ready or not. */
async function report(sandbox: Sandbox): Promise<void> {
  maskSandbox(sandbox);
  core.setOutput('sandbox-id', sandbox.sandbox_id);
  core.setOutput('status', sandbox.status);
  core.setOutput('app-url', sandbox.app_url ?? '');
  core.setOutput('twins', JSON.stringify(sandbox.twins));
  core.setOutput('env-vars', JSON.stringify(sandbox.env_vars));
  try {
    await writeSummary(core.summary, sandbox);
  } catch (error) {
    // Outside a runner there is no summary file; that must not fail a deploy that worked.
    core.warning(`Could not write the job summary: ${(error as Error).message}`);
  }
}

/**
 * The twins' credentials and the caller's variables end up in outputs and maybe in later steps' logs;
 * masking every value is blunt (a value like `true` gets masked everywhere) but never leaks a token.
 */
function maskSandbox(sandbox: Sandbox): void {
  maskValue(sandbox.twin_admin_token);
  for (const value of Object.values(sandbox.env_vars)) maskValue(value);
  for (const twin of Object.values(sandbox.twins))
    for (const value of Object.values(twin.env_vars)) maskValue(value);
}
