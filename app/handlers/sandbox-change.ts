import type { SandboxRecord } from '../../server/store/records.ts';
import { syncPull } from '../comment-upkeep.ts';
import type { AppDeps } from '../deps.ts';

/**
 * Twinbox's own event, not GitHub's: a sandbox changed state (lifecycle `change`), so its pull request's
 * Deployment and comment are brought up to date.
 */
export function onSandboxChange(deps: AppDeps) {
  return async (sandbox: SandboxRecord): Promise<void> => {
    const rec = await deps.store.githubPulls.findOneBy('sandbox_id', sandbox.id);
    if (!rec) return;
    await deps.pullLocks.run(rec.id, async () => {
      const current = await deps.store.githubPulls.get(rec.id);
      // Superseded meanwhile: the pull request speaks about its new sandbox now.
      if (!current || current.sandbox_id !== sandbox.id) return;
      await syncPull(deps, current);
    });
  };
}
