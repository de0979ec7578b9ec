import type { Context } from 'probot';
import { forgetInstallation, installationAccount, recordInstallation } from '../accounts.ts';
import type { AppDeps } from '../deps.ts';

/**
 * `installation.created` / `installation.deleted`: who installed the App, so its sandboxes go to that
 * person's Twinbox account (accounts.ts). Installations the App never heard of are read from GitHub
 * when first needed.
 */
export function onInstallationCreated(deps: AppDeps) {
  return async (context: Context<'installation.created'>): Promise<void> => {
    const { installation, sender } = context.payload;
    if (typeof installation?.id !== 'number' || typeof sender?.id !== 'number') return;
    await recordInstallation(deps.store, {
      id: installation.id,
      account: installationAccount(installation.account),
      senderId: sender.id,
    });
  };
}

export function onInstallationDeleted(deps: AppDeps) {
  return async (context: Context<'installation.deleted'>): Promise<void> => {
    const id = context.payload.installation?.id;
    if (typeof id === 'number') await forgetInstallation(deps.store, id);
  };
}
