import type { Context } from 'probot';
import { syncPull } from '../comment-upkeep.ts';
import type { AppDeps } from '../deps.ts';
import { pullFacts, pullKey, type PullFacts } from '../pull-facts.ts';
import { liveSandbox, rememberPull, savePull } from '../pull-records.ts';
import { createPullSandbox } from '../sandbox-creation.ts';
import { endSandbox, supersede } from '../sandbox-control.ts';

const ACTIONS = new Set(['opened', 'reopened', 'synchronize', 'ready_for_review', 'closed']);

/**
 * `pull_request` events:
 *
 * - `opened`, `reopened`, `ready_for_review`: a sandbox for the head, unless one is already live for
 *   that commit (then nothing is created and the comment is not rewritten);
 * - `synchronize` (a push): the current sandbox is superseded (deleted, Deployment inactive) and a new
 *   one made for the new head;
 * - `closed`: the sandbox is deleted and the comment says the pull request was closed.
 *
 * Nothing happens unless GitHub confirms that the event's installation covers the base repository.
 */
export function onPullRequest(deps: AppDeps) {
  return async (context: Context<'pull_request'>): Promise<void> => {
    const { payload } = context;
    if (!ACTIONS.has(payload.action)) return;
    // Signed, but the shape is still the sender's word: a payload missing what GitHub always sends is ignored.
    if (
      typeof payload.pull_request?.base?.repo?.id !== 'number' ||
      typeof payload.repository?.id !== 'number'
    ) {
      deps.logger.warn(
        { delivery: context.id },
        'pull_request event without its pull request or repository; ignored',
      );
      return;
    }
    const installationId = 'installation' in payload ? payload.installation?.id : undefined;
    if (installationId === undefined) return;
    const base = payload.pull_request.base.repo;
    if (payload.repository.id !== base.id) {
      deps.logger.warn(
        { delivery: context.id, repo: payload.repository.full_name, base: base.full_name },
        'pull_request event whose repository is not its base repository; event ignored',
      );
      return;
    }
    const repo = { id: base.id, fullName: base.full_name };
    if (!(await deps.coverage.covers(installationId, repo))) return;
    await pullRequestChanged(deps, payload.action, pullFacts(payload.pull_request, installationId));
  };
}

async function pullRequestChanged(deps: AppDeps, action: string, facts: PullFacts): Promise<void> {
  const key = pullKey(facts.repoId, facts.number);
  await deps.pullLocks.run(key, async () => {
    const previous = await deps.store.githubPulls.get(key);
    let rec = await rememberPull(deps.store, facts);
    if (action === 'closed') {
      await endSandbox(deps, rec, 'closed');
      rec = await savePull(deps.store, rec, {
        notice: rec.sandbox_id ? null : { kind: 'closed', text: 'The pull request was closed.' },
      });
      await syncPull(deps, rec);
      return;
    }
    const pushed = previous !== undefined && previous.head_sha !== facts.headSha;
    if (pushed) rec = await supersede(deps, rec);
    // A repeated opened/ready_for_review for the commit already deployed changes nothing.
    if (!pushed && (await liveSandbox(deps.store, rec.sandbox_id))) {
      await syncPull(deps, rec);
      return;
    }
    await createPullSandbox(deps, rec, facts, { byCommand: false });
  });
}
