import { randomBytes } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { EngineTwin, type EngineTwinSaved } from '../../engine/engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { KeptAnswers } from '../../engine/kept-answers.ts';
import { json } from '../../runtime/http.ts';
import { presentedToken, secretEquals } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { twilioDescriptor, type TwilioSeed } from './descriptor.ts';

/** The engine's fixed ids (its default account, number and Verify service), which the twin keeps. */
const ACCOUNT_SID = `AC${'0'.repeat(32)}`;
const ENGINE_API_KEY_SID = `SK${'0'.repeat(32)}`;
const DEFAULT_PHONE_NUMBER = '+15551234567';
const DEFAULT_VERIFY_SERVICE_SID = `VA${'0'.repeat(32)}`;

/** Twilio's REST error body (https://www.twilio.com/docs/usage/twilios-response#response-formats-exceptions). */
const twilioError = (status: number, code: number, message: string, headers?: Record<string, string>) =>
  json(status, { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status }, headers);

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** Twilio calls the app's callback URLs itself (the engine signs them with X-Twilio-Signature); no outbox events. */
const noSigner: WebhookSigner = () => ({});

class TwilioTwin extends EngineTwin {
  constructor(engine: Engine, baseUrl: string, credentials: Record<string, string>) {
    super(engine, baseUrl, credentials, noSigner);
  }

  /** Active API keys of the account (the instance's and any the seed or the API added). */
  private keySecret(sid: string): string | undefined {
    const key = this.engine.store
      .collection('twilio.api_keys', ['sid', 'account_sid'])
      .all()
      .find((k) => k.sid === sid && k.active === true);
    return key ? String(key.secret) : undefined;
  }

  /**
   * Basic auth as Twilio takes it: the Account SID with the Auth Token, or an API key SID with its secret.
   * Anything else is 401 code 20003, before the body is read.
   */
  authorize(head: RequestHead): Authorization {
    const header = head.headers.get('authorization');
    const presented = presentedToken(header);
    const decoded =
      presented?.scheme === 'basic'
        ? Buffer.from(header!.trim().split(/\s+/)[1] ?? '', 'base64').toString('utf8')
        : '';
    const colon = decoded.indexOf(':');
    const user = colon === -1 ? '' : decoded.slice(0, colon);
    const password = colon === -1 ? '' : decoded.slice(colon + 1);
    const expected =
      user === this.credentials.TWILIO_ACCOUNT_SID
        ? this.credentials.TWILIO_AUTH_TOKEN
        : this.keySecret(user);
    if (expected !== undefined && password && secretEquals(password, expected)) return true;
    return twilioError(401, 20003, 'Authenticate', { 'www-authenticate': 'Basic realm="Twilio API"' });
  }

  /** GET answers kept while the engine's store is unchanged (engine/kept-answers.ts). */
  private readonly kept = new KeptAnswers(this.engine);

  override handle(request: Request): Promise<Response> {
    // The engine's GETs read its store and nothing else (no clock, no random value in a body): the same
    // request against the same store gets the same answer, which is kept rather than built again.
    const key = request.method === 'GET' ? KeptAnswers.keyOf(request) : undefined;
    return this.kept.serve(key, () => this.engineAnswer(request));
  }

  private async engineAnswer(request: Request): Promise<Response> {
    const response = await this.engine.app.fetch(request);
    if (response.status === 404) {
      const body = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { code?: unknown } | undefined;
      if (typeof body?.code !== 'number')
        return twilioError(
          404,
          20404,
          `The requested resource ${new URL(request.url).pathname} was not found`,
        );
    }
    return response;
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return twilioError(413, 21617, 'The request body is too large.');
    if (status >= 500) return twilioError(500, 20500, 'An internal server error has occurred');
    return twilioError(status, 20001, message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') return twilioError(429, 20429, 'Too Many Requests', { 'retry-after': '1' });
    return status >= 500
      ? twilioError(status, 20500, 'An internal server error has occurred')
      : twilioError(status, 20001, 'Bad request');
  }

  envVars(): Record<string, string> {
    const numbers = this.engine.store
      .collection('twilio.phone_numbers', ['sid', 'account_sid', 'phone_number'])
      .all();
    return {
      ...this.credentials,
      TWILIO_PHONE_NUMBER: String(numbers[0]?.phone_number ?? DEFAULT_PHONE_NUMBER),
      TWILIO_VERIFY_SERVICE_SID: DEFAULT_VERIFY_SERVICE_SID,
      // twilio-node has no base-URL setting: the app passes an httpClient that rewrites
      // https://<product>.twilio.com/... to this URL (docs/twins.md, "Twilio").
      TWILIO_BASE_URL: this.baseUrl,
    };
  }

  override secrets(): string[] {
    return [this.credentials.TWILIO_AUTH_TOKEN!, this.credentials.TWILIO_API_SECRET!];
  }

  /** The engine always seeds its published example key; only the instance's credentials may work. */
  dropEngineKey(): void {
    const keys = this.engine.store.collection('twilio.api_keys', ['sid', 'account_sid']);
    for (const key of keys.all()) if (key.sid === ENGINE_API_KEY_SID) keys.delete(key.id);
  }

  protected override afterReset(): void {
    this.dropEngineKey();
  }

  override restore(saved: EngineTwinSaved): void {
    super.restore(saved);
    this.dropEngineKey();
  }

  async applySeed(raw: unknown): Promise<void> {
    this.engine.seedFromConfig({ account: { sid: ACCOUNT_SID }, ...(raw as TwilioSeed) });
  }
}

export const twilioTwin = engineTwinFactory(twilioDescriptor, {
  newCredentials: () => ({
    TWILIO_ACCOUNT_SID: ACCOUNT_SID,
    TWILIO_AUTH_TOKEN: hex(16),
    TWILIO_API_KEY: `SK${hex(16)}`,
    TWILIO_API_SECRET: randomBytes(24).toString('base64url'),
  }),
  engineSeed: (seed, credentials) => ({
    tokens: {},
    twilio: {
      // The engine's default account, with the instance's own Auth Token and API key.
      account: { sid: ACCOUNT_SID, auth_token: credentials.TWILIO_AUTH_TOKEN },
      api_keys: [{ sid: credentials.TWILIO_API_KEY, secret: credentials.TWILIO_API_SECRET }],
      ...seed,
    },
  }),
  driver: (engine, baseUrl, credentials) => new TwilioTwin(engine, baseUrl, credentials),
  fresh: (twin) => twin.dropEngineKey(),
});
