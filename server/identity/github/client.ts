/** What Twinbox reads of a GitHub user after the OAuth exchange. */
export interface GitHubProfile {
  id: number;
  login: string;
  emails: { email: string; primary: boolean; verified: boolean }[];
}

/**
 * The token GitHub issued. An OAuth App's never expires; a GitHub App's user token expires in 8 hours and
 * comes with a refresh token (itself good for about 6 months).
 */
export interface GitHubTokenSet {
  accessToken: string;
  refreshToken: string | null;
  expiresAt: Date | null;
  refreshExpiresAt: Date | null;
}

/** GitHub refused a refresh token (revoked, expired, already used): the connection must be made again. */
export class RefreshRefusedError extends Error {
  constructor(reason: string) {
    super(`GitHub refused to refresh the token (${reason})`);
    this.name = 'RefreshRefusedError';
  }
}

/** A failed step of the GitHub exchange, with a code and text for the error redirect. */
export class GitHubAuthError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'GitHubAuthError';
  }
}

const TIMEOUT_MS = 10_000;

/** The GitHub OAuth web flow's server side: code + PKCE verifier -> token -> /user, /user/emails. */
export class GitHubOAuthClient {
  constructor(
    private readonly o: { clientId: string; clientSecret: string; oauthUrl: string; apiUrl: string },
  ) {}

  authorizeUrl(params: { redirectUri: string; state: string; codeChallenge: string }): string {
    const url = new URL('/login/oauth/authorize', this.o.oauthUrl);
    url.search = new URLSearchParams({
      client_id: this.o.clientId,
      redirect_uri: params.redirectUri,
      // `repo`: an OAuth App's token reads private repositories only with it (GitHub Apps ignore scopes).
      scope: 'read:user user:email repo',
      state: params.state,
      code_challenge: params.codeChallenge,
      code_challenge_method: 'S256',
      allow_signup: 'true',
    }).toString();
    return url.toString();
  }

  /** The user's profile and the token GitHub issued, which deploys later fetch their repositories with. */
  async profile(
    code: string,
    codeVerifier: string,
    redirectUri: string,
  ): Promise<GitHubProfile & { tokens: GitHubTokenSet }> {
    const tokens = await this.exchange(code, codeVerifier, redirectUri);
    const token = tokens.accessToken;
    const user = (await this.api('/user', token)) as { id?: unknown; login?: unknown };
    const emails = (await this.api('/user/emails', token)) as unknown;
    if (typeof user.id !== 'number' || typeof user.login !== 'string' || !Array.isArray(emails)) {
      throw new GitHubAuthError('github_error', 'GitHub answered with an unexpected user profile.');
    }
    return {
      tokens,
      id: user.id,
      login: user.login,
      emails: emails
        .filter((e): e is Record<string, unknown> => typeof e === 'object' && e !== null)
        .filter((e) => typeof e.email === 'string')
        .map((e) => ({
          email: e.email as string,
          primary: e.primary === true,
          verified: e.verified === true,
        })),
    };
  }

  /** A new token pair for `refreshToken` (GitHub spends the old pair). */
  async refresh(refreshToken: string): Promise<GitHubTokenSet> {
    const response = await this.fetch(new URL('/login/oauth/access_token', this.o.oauthUrl), {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: this.o.clientId,
        client_secret: this.o.clientSecret,
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
      }),
    });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (response.ok && typeof body.access_token === 'string') return tokenSet(body);
    if (typeof body.error === 'string') throw new RefreshRefusedError(body.error);
    throw new GitHubAuthError('github_error', `GitHub answered ${response.status} to a token refresh.`);
  }

  private async exchange(code: string, codeVerifier: string, redirectUri: string): Promise<GitHubTokenSet> {
    const response = await this.fetch(new URL('/login/oauth/access_token', this.o.oauthUrl), {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: this.o.clientId,
        client_secret: this.o.clientSecret,
        code,
        code_verifier: codeVerifier,
        redirect_uri: redirectUri,
      }),
    });
    const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
    if (!response.ok || typeof body.access_token !== 'string') {
      const reason = typeof body.error === 'string' ? ` (${body.error})` : '';
      throw new GitHubAuthError(
        'github_exchange_failed',
        `GitHub did not accept the sign-in code${reason}. Try again.`,
      );
    }
    // Fail closed: without user:email (or the broader user) /user/emails is not to be trusted as complete.
    const scopes = String(body.scope ?? '')
      .split(/[\s,]+/)
      .filter(Boolean);
    // A GitHub App's user token has no scopes (scope ""): its permissions are the App's, e-mail included.
    const githubApp = typeof body.refresh_token === 'string' && body.refresh_token !== '';
    if (!githubApp && !scopes.includes('user:email') && !scopes.includes('user')) {
      throw new GitHubAuthError(
        'github_scope_missing',
        'GitHub did not grant access to your e-mail addresses (scope user:email). Sign in again and allow it.',
      );
    }
    return tokenSet(body);
  }

  private async api(path: string, token: string): Promise<unknown> {
    const response = await this.fetch(
      new URL(path.replace(/^\//, ''), `${this.o.apiUrl.replace(/\/+$/, '')}/`),
      {
        headers: {
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${token}`,
          'user-agent': 'twinbox',
          'x-github-api-version': '2022-11-28',
        },
      },
    );
    if (!response.ok) {
      throw new GitHubAuthError(
        'github_error',
        `GitHub answered ${response.status} to ${path}. Try again later.`,
      );
    }
    return response.json();
  }

  private async fetch(url: URL, init: RequestInit): Promise<Response> {
    try {
      return await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch {
      throw new GitHubAuthError('github_unreachable', 'GitHub could not be reached. Try again later.');
    }
  }
}

/** GitHub's token answer as a GitHubTokenSet; `expires_in` and friends only come with expiring tokens. */
function tokenSet(body: Record<string, unknown>): GitHubTokenSet {
  const at = (seconds: unknown) =>
    typeof seconds === 'number' && seconds > 0 ? new Date(Date.now() + seconds * 1000) : null;
  return {
    accessToken: body.access_token as string,
    refreshToken: typeof body.refresh_token === 'string' && body.refresh_token ? body.refresh_token : null,
    expiresAt: at(body.expires_in),
    refreshExpiresAt: at(body.refresh_token_expires_in),
  };
}
