/**
 * What the sign-in twins on the engine (Google, Microsoft, Apple) do alike: drop the engine's demo
 * account, register the twin's own OAuth client (its id and secret are the env vars the sandbox hands
 * out), keep doing both after a reset, and remember revoked tokens so the request log keeps masking them
 * once they have left the engine's token map.
 */
import type { Engine } from './emulate.ts';
import { EngineTwin } from './engine-twin.ts';

export interface OAuthEngineTwinOptions {
  /** The engine's store collection of the service's accounts (e.g. `microsoft.users`). */
  usersCollection: string;
  /** Its index fields, as the engine declared them (the engine refuses the collection under others). */
  usersIndexes: string[];
  /** The engine's demo account, in every engine store: kept only if the seed names it too. */
  demoEmail: string;
  /** The seed's accounts and the redirect URIs of the twin's client. */
  seed: { users?: Array<{ email: string }>; redirect_uris?: string[] };
}

export abstract class OAuthEngineTwin extends EngineTwin {
  /** Tokens revoked through the vendor's revoke endpoint (persisted: the log masks them for good). */
  protected revoked = new Set<string>();

  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    protected readonly oauth: OAuthEngineTwinOptions,
  ) {
    // None of them sends webhooks the twin models (Gmail push goes through Pub/Sub; Graph change
    // notifications and Apple's server-to-server notifications are absent): nothing to sign.
    super(engine, baseUrl, credentials, () => ({}));
  }

  /** The engine's `oauth_clients` seed entry of the twin's client, without name and redirect URIs. */
  protected abstract oauthClient(): Record<string, unknown>;

  /** Deletes the demo account wherever the service keeps it (default: its users collection). */
  protected dropDemoAccount(): void {
    const users = this.engine.store.collection(this.oauth.usersCollection, this.oauth.usersIndexes);
    for (const u of users.findBy('email', this.oauth.demoEmail)) users.delete(u.id);
  }

  /** Makes a fresh (or reset) engine store the sandbox's: no demo account, the twin's client registered. */
  prepare(): void {
    if (!this.oauth.seed.users?.some((u) => u.email === this.oauth.demoEmail)) this.dropDemoAccount();
    this.engine.seedFromConfig({
      oauth_clients: [
        { ...this.oauthClient(), name: 'Twinbox app', redirect_uris: this.oauth.seed.redirect_uris ?? [] },
      ],
    });
  }

  /**
   * Remembers the token a revoke request names (in the form body, or in the query where the vendor takes it
   * there too) and returns it: once revoked it leaves the engine's maps, but the log must keep masking it.
   */
  protected async rememberRevoked(request: Request, fromQuery = false): Promise<string | undefined> {
    const query = fromQuery ? new URL(request.url).searchParams.get('token') : null;
    const token = query ?? new URLSearchParams(await request.clone().text()).get('token') ?? undefined;
    if (token) this.revoked.add(token);
    return token;
  }

  protected override afterReset(): void {
    this.prepare();
  }

  protected override saveExtra(): unknown {
    return { revoked: [...this.revoked] };
  }

  protected override restoreExtra(extra: unknown): void {
    const revoked = (extra as { revoked?: unknown } | undefined)?.revoked;
    this.revoked = new Set(Array.isArray(revoked) ? revoked.filter((r) => typeof r === 'string') : []);
  }
}
