/**
 * What every twin built on the engine does the same way: forward the vendor API to the engine's app,
 * send the engine's events to our webhook outbox, keep credentials beside the engine's store in the
 * snapshot, reset to the start seed. A twin subclasses it with its own credentials check, error shapes
 * and seed mapping (server/twins/vendors/<name>/twin.ts).
 */
import type { Authorization, Granted, RequestHead, TwinDriver } from '../contract.ts';
import { WebhookOutbox, type WebhookSigner, type WebhookTarget } from '../runtime/webhooks.ts';
import type { Engine, EngineStoreSnapshot, EngineTokenUser } from './emulate.ts';

/** The persisted state of an engine twin: its credentials (env var values and more), target and store. */
export interface EngineTwinSaved {
  credentials: Record<string, string>;
  target?: WebhookTarget;
  tokens: Array<[string, EngineTokenUser]>;
  engine: EngineStoreSnapshot;
  /** Twin-specific state beside the engine's (e.g. revoked keys). */
  extra?: unknown;
}

export abstract class EngineTwin implements TwinDriver {
  readonly webhooks: WebhookOutbox;

  constructor(
    protected readonly engine: Engine,
    protected readonly baseUrl: string,
    /** Generated once, persisted, unchanged by reset: what `envVars` hands out. */
    protected readonly credentials: Record<string, string>,
    signer: WebhookSigner,
  ) {
    this.webhooks = new WebhookOutbox(signer);
    // The engine dispatches its events to its own subscriptions (none here); ours go to the target the
    // deploy points at the app (docs/twins.md, "Webhooks").
    const dispatch = engine.webhooks.dispatch.bind(engine.webhooks);
    engine.webhooks.dispatch = async (event, action, payload, owner, repo) => {
      if (!this.sendsEvents()) return;
      void this.webhooks.deliver(event, this.eventBody(event, payload, owner));
      return dispatch(event, action, payload, owner, repo);
    };
  }

  /**
   * Whether the engine's events go out now, to our target and to the engine's own subscriptions (default:
   * always). A twin that writes its seed through the engine's API holds them meanwhile.
   */
  protected sendsEvents(): boolean {
    return true;
  }

  /** The body an engine event is delivered with (default: the engine's payload); `owner` is its account. */
  protected eventBody(_event: string, payload: unknown, _owner: string): unknown {
    return payload;
  }

  abstract authorize(head: RequestHead): Authorization | Promise<Authorization>;
  abstract errorResponse(status: number, message: string, code?: string): Response;
  abstract faultResponse(kind: 'status' | 'rate_limit', status: number): Response;
  abstract envVars(): Record<string, string>;
  abstract applySeed(seed: unknown): Promise<void>;

  async handle(request: Request, _granted: Granted): Promise<Response> {
    return this.engine.app.fetch(request);
  }

  secrets(): string[] {
    return Object.values(this.credentials);
  }

  /** Twin-specific state to persist beside the engine's. */
  protected saveExtra(): unknown {
    return undefined;
  }

  protected restoreExtra(_extra: unknown): void {}

  /** Called after the engine's reset (which re-applies the engine-level seed), e.g. for seed parts it lacks. */
  protected afterReset(): void | Promise<void> {}

  snapshot(): EngineTwinSaved {
    const extra = this.saveExtra();
    return {
      credentials: { ...this.credentials },
      target: this.webhooks.target,
      tokens: [...this.engine.tokenMap],
      engine: this.engine.store.snapshot(),
      ...(extra === undefined ? {} : { extra }),
    };
  }

  restore(saved: EngineTwinSaved): void {
    this.engine.store.restore(saved.engine);
    this.engine.tokenMap.clear();
    for (const [token, user] of saved.tokens) this.engine.tokenMap.set(token, user);
    this.webhooks.target = saved.target;
    this.restoreExtra(saved.extra);
  }

  async reset(): Promise<void> {
    const tokens = [...this.engine.tokenMap];
    this.engine.reset();
    // The engine's reset drops installation tokens only; ours (the env var credentials) stay valid.
    this.engine.tokenMap.clear();
    for (const [token, user] of tokens) this.engine.tokenMap.set(token, user);
    this.webhooks.clear();
    await this.afterReset();
  }

  async close(): Promise<void> {
    await this.webhooks.idle();
  }
}
