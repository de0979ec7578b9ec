import type { Logger } from 'pino';

/** Who a deploy's source is fetched for: the sandbox's repository, owner and starting installation. */
export interface SourceOwner {
  repo: string;
  /** The account that owns the sandbox; absent for fetches on nobody's behalf. */
  owner_id?: string;
  /** The GitHub App installation that started the sandbox (app/), if one did. */
  installation_id?: number | null;
}

/** A token to fetch with, minted or read just now, and what it is (for error texts; never the token). */
export interface SourceToken {
  token: string;
  via: 'installation' | 'connection' | 'server';
}

/**
 * The seam between the deploy engine and whatever can read GitHub for a sandbox. The engine imports
 * neither the GitHub App nor identity: the composition root (server/twinbox.ts) fills this in. Tokens are
 * asked for when the source step runs and never kept: installation tokens last an hour, user tokens 8.
 */
export interface SourceCredentials {
  /** A token that may read `owner.repo`; undefined: fetch anonymously (public repositories only). */
  tokenFor(owner: SourceOwner): Promise<SourceToken | undefined>;
}

/**
 * The sandbox's own credentials, in order: the installation's token when the GitHub App started it (the
 * App is installed on the repository, so it reads it), else the owner's GitHub connection, else the
 * server's token (`GITHUB_TOKEN`, development only).
 */
export function sandboxSourceCredentials(o: {
  /** Mints a token of installation `id`; undefined when the GitHub App is not configured. */
  installationToken?: (id: number) => Promise<string>;
  /** The owner's GitHub connection token, refreshed if it had expired; undefined without one. */
  connectionToken: (accountId: string) => Promise<string | undefined>;
  serverToken?: string;
  logger: Logger;
}): SourceCredentials {
  return {
    async tokenFor(owner) {
      if (owner.installation_id && o.installationToken) {
        try {
          return { token: await o.installationToken(owner.installation_id), via: 'installation' };
        } catch (error) {
          // Uninstalled since, or GitHub unreachable: the owner's own connection may still read it.
          o.logger.warn(
            { err: error, installation_id: owner.installation_id, repo: owner.repo },
            'could not mint an installation token; fetching with the owner’s GitHub connection',
          );
        }
      }
      const connection = owner.owner_id ? await o.connectionToken(owner.owner_id) : undefined;
      if (connection) return { token: connection, via: 'connection' };
      return o.serverToken ? { token: o.serverToken, via: 'server' } : undefined;
    },
  };
}
