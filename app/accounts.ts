import { UniqueViolationError, type Store } from '../server/store/store.ts';
import type { AccountRecord, GitHubInstallationRecord } from '../server/store/records.ts';
import type { AppDeps } from './deps.ts';

export interface InstallationFacts {
  id: number;
  account: { id: number; login: string; type?: string } | null;
  /** GitHub id of whoever installed the App (`sender` of `installation.created`); null when unknown. */
  senderId: number | null;
}

/** An installation's GitHub account, in the shape the records keep (login, or slug for an App owner). */
export function installationAccount(
  account: { id: number; login?: string; slug?: string; type?: string } | null | undefined,
): InstallationFacts['account'] {
  if (!account) return null;
  return { id: account.id, login: account.login ?? account.slug ?? '', type: account.type ?? 'User' };
}

/** Records (or refreshes) an installation in `github_installations`. */
export async function recordInstallation(store: Store, installation: InstallationFacts): Promise<void> {
  const now = new Date().toISOString();
  const record: GitHubInstallationRecord = {
    id: String(installation.id),
    github_account_id: installation.account?.id ?? 0,
    github_account_login: installation.account?.login ?? '',
    github_account_type: installation.account?.type ?? 'User',
    installer_github_id: installation.senderId,
    created_at: now,
    updated_at: now,
  };
  if (!(await store.githubInstallations.get(record.id))) {
    try {
      await store.githubInstallations.insert(record);
      return;
    } catch (error) {
      // Recorded meanwhile by another delivery (in this process or another): refreshed below instead,
      // rather than failing this delivery.
      if (!(error instanceof UniqueViolationError)) throw error;
    }
  }
  await store.githubInstallations.update(record.id, (current) => ({
    ...record,
    created_at: current.created_at,
  }));
}

export async function forgetInstallation(store: Store, id: number): Promise<void> {
  await store.githubInstallations.delete(String(id));
}

/**
 * The Twinbox account an installation belongs to: the account whose connected GitHub identity
 * installed it (the `sender` of `installation.created`), or, for an installation on a user account, that
 * user. Looked up on every event, so connecting GitHub later takes effect at the next push or command.
 */
export async function accountOfInstallation(
  deps: AppDeps,
  installationId: number,
): Promise<AccountRecord | undefined> {
  const installation = await installationRecord(deps, installationId);
  if (!installation) return undefined;
  const candidates = [
    installation.installer_github_id,
    installation.github_account_type === 'User' ? installation.github_account_id : null,
  ].filter((id): id is number => typeof id === 'number' && id > 0);
  for (const githubId of candidates) {
    const identity = await deps.store.identities.findOneBy('provider_key', `github:${githubId}`);
    const account = identity && (await deps.store.accounts.get(identity.account_id));
    if (account) return account;
  }
  return undefined;
}

/** What the comment says when the installation has no Twinbox account behind it. */
export async function connectText(deps: AppDeps, installationId: number): Promise<string> {
  const installation = await deps.store.githubInstallations.get(String(installationId));
  const who = installation?.github_account_login
    ? ` (installed on @${installation.github_account_login})`
    : '';
  return (
    `This GitHub App installation${who} is not linked to a Twinbox account, so no sandbox was created. ` +
    `Whoever installed the app: sign in to Twinbox and connect GitHub at ${deps.publicUrl()}/auth/github/connect, ` +
    'then push a commit or comment `/twinbox deploy`.'
  );
}

async function installationRecord(deps: AppDeps, id: number): Promise<GitHubInstallationRecord | undefined> {
  const known = await deps.store.githubInstallations.get(String(id));
  if (known) return known;
  // Installed before Twinbox listened (or the event was lost): ask GitHub, as the App.
  try {
    const app = await deps.auth();
    const { data } = await app.rest.apps.getInstallation({ installation_id: id });
    await recordInstallation(deps.store, {
      id,
      account: installationAccount(
        data.account as { id: number; login?: string; slug?: string; type?: string } | null,
      ),
      senderId: null,
    });
  } catch (error) {
    deps.logger.warn({ err: error, installation_id: id }, 'could not read the installation');
    return undefined;
  }
  return deps.store.githubInstallations.get(String(id));
}
