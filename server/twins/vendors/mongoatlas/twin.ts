import { createHmac, randomBytes } from 'node:crypto';
import { TwinInputError, type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { KeptAnswers } from '../../engine/kept-answers.ts';
import { json } from '../../runtime/http.ts';
import { presentedToken, randomToken, secretEquals, sha256Hex } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { atlasStatus, toAtlasResponse } from './shape.ts';
import { mongoatlasDescriptor, type MongoAtlasSeed } from './descriptor.ts';

/** The Atlas Administration API's error body (https://www.mongodb.com/docs/atlas/api/atlas-admin-api-ref/#errors). */
const atlasError = (status: number, errorCode: string, detail: string, headers?: Record<string, string>) =>
  json(
    status,
    { detail, error: status, errorCode, parameters: [], reason: REASONS[status] ?? 'Error' },
    headers,
  );

const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  413: 'Payload Too Large',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
};

/** The Data API's refusal of a missing or wrong `api-key`. */
const dataApiUnauthorized = () =>
  json(401, { error: 'invalid session: error finding user for endpoint', error_code: 'InvalidSession' });

const TOKEN_PATH = '/api/oauth/token';
const REVOKE_PATH = '/api/oauth/revoke';
const TOKEN_TTL_S = 3600;

/** Atlas signs alert webhooks with HMAC-SHA1 of the body, base64, in `X-MMS-Signature`. */
const atlasSigner: WebhookSigner = ({ body, secret }) => ({
  'x-mms-signature': createHmac('sha1', secret).update(body).digest('base64'),
});

class MongoAtlasTwin extends EngineTwin {
  /** Access tokens issued to the service account, by SHA-256: expiry in ms since the epoch. */
  private tokens = new Map<string, number>();
  /** Admin API GET answers kept while the engine's store is unchanged (engine/kept-answers.ts). */
  private readonly kept = new KeptAnswers(this.engine);
  /** The organization's 24-hex-digit id, from the instance's client id (which never changes). */
  private readonly orgId: string;

  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: MongoAtlasSeed,
  ) {
    super(engine, baseUrl, credentials, atlasSigner);
    this.orgId = sha256Hex(`org:${credentials.MONGODB_ATLAS_CLIENT_ID}`).slice(0, 24);
  }

  /**
   * The Admin API takes a Bearer token from the service account's client-credentials grant, the Data API
   * its `api-key`; the token endpoints check the client's Basic credentials in `handle`. The engine itself
   * checks nothing.
   */
  authorize(head: RequestHead): Authorization {
    const path = head.url.pathname;
    if (path === TOKEN_PATH || path === REVOKE_PATH) return 'public';
    if (path.startsWith('/app/data-api/')) {
      const key = head.headers.get('api-key') ?? '';
      return secretEquals(key, this.credentials.MONGODB_DATA_API_KEY!) ? true : dataApiUnauthorized();
    }
    const presented = presentedToken(head.headers.get('authorization'));
    const expires = presented?.scheme === 'bearer' ? this.tokens.get(sha256Hex(presented.token)) : undefined;
    if (expires !== undefined && expires > Date.now()) return true;
    return atlasError(401, 'USER_UNAUTHORIZED', 'Current user is not authorized to perform this action.', {
      'www-authenticate': 'Bearer realm="MMS Public API"',
    });
  }

  /** HTTP Basic with the service account's client id and secret, as Atlas's token endpoint takes them. */
  private clientAuthenticated(request: Request): boolean {
    const m = /^\s*basic\s+(\S+)\s*$/i.exec(request.headers.get('authorization') ?? '');
    if (!m) return false;
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon === -1) return false;
    const id = decodeURIComponent(decoded.slice(0, colon));
    const secret = decodeURIComponent(decoded.slice(colon + 1));
    return (
      secretEquals(id, this.credentials.MONGODB_ATLAS_CLIENT_ID!) &&
      secretEquals(secret, this.credentials.MONGODB_ATLAS_CLIENT_SECRET!)
    );
  }

  override async handle(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (pathname === TOKEN_PATH || pathname === REVOKE_PATH) return this.oauth(request, pathname);
    if (!pathname.startsWith('/api/atlas/v2/') && !pathname.startsWith('/app/data-api/v1/action/'))
      return atlasError(404, 'RESOURCE_NOT_FOUND', `Cannot find resource ${pathname}.`);
    if (request.method === 'POST' || request.method === 'PATCH') {
      const problem = bodyProblem(
        pathname,
        await request
          .clone()
          .json()
          .catch(() => undefined),
      );
      if (problem) return atlasError(400, 'INVALID_PARAMETER', problem);
    }
    // The engine's Admin API GETs read its store and nothing else: the same request against the same
    // store gets the same answer, which is kept rather than built and reshaped again.
    const key =
      request.method === 'GET' && pathname.startsWith('/api/atlas/v2/')
        ? KeptAnswers.keyOf(request)
        : undefined;
    return this.kept.serve(key, () => this.engineAnswer(request, pathname));
  }

  private async engineAnswer(request: Request, pathname: string): Promise<Response> {
    const response = await this.engine.app.fetch(request);
    if (response.status >= 500) return this.errorResponse(500, 'Unexpected error.');
    if (response.ok && pathname.startsWith('/api/atlas/v2/'))
      return toAtlasResponse(response, this.orgId, atlasStatus(request.method, pathname, response.status));
    if (response.status !== 404) return response;
    // The engine's own misses (no route) come without Atlas's error body.
    const body = (await response
      .clone()
      .json()
      .catch(() => undefined)) as { errorCode?: unknown } | undefined;
    return typeof body?.errorCode === 'string'
      ? response
      : atlasError(404, 'RESOURCE_NOT_FOUND', `Cannot find resource ${pathname}.`);
  }

  private async oauth(request: Request, pathname: string): Promise<Response> {
    if (request.method !== 'POST')
      return json(405, { error: 'invalid_request', error_description: 'Use POST.' }, { allow: 'POST' });
    if (!this.clientAuthenticated(request))
      return json(
        401,
        { error: 'invalid_client', error_description: 'Invalid client credentials.' },
        { 'www-authenticate': 'Basic realm="MongoDB Atlas"' },
      );
    const form = new URLSearchParams(await request.text());
    if (pathname === REVOKE_PATH) {
      this.tokens.delete(sha256Hex(form.get('token') ?? ''));
      return new Response(null, { status: 200 });
    }
    if (form.get('grant_type') !== 'client_credentials')
      return json(400, {
        error: 'unsupported_grant_type',
        error_description: 'Only client_credentials is supported.',
      });
    const now = Date.now();
    for (const [hash, expires] of this.tokens) if (expires <= now) this.tokens.delete(hash);
    const token = `eyJ${randomBytes(32).toString('base64url')}`;
    this.tokens.set(sha256Hex(token), now + TOKEN_TTL_S * 1000);
    return json(200, { access_token: token, expires_in: TOKEN_TTL_S, token_type: 'Bearer' });
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return atlasError(413, 'PAYLOAD_TOO_LARGE', 'Request body is too large.');
    if (status >= 500) return atlasError(500, 'UNEXPECTED_ERROR', 'Unexpected error.');
    if (code === 'invalid_json') return atlasError(400, 'INVALID_JSON', 'Received JSON is malformed.');
    return atlasError(status, 'INVALID_PARAMETER', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit')
      return atlasError(429, 'RATE_LIMITED', 'Resource has been rate limited.', { 'retry-after': '60' });
    return status >= 500
      ? atlasError(status, 'UNEXPECTED_ERROR', 'Unexpected error.')
      : atlasError(status, 'INVALID_PARAMETER', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      MONGODB_ATLAS_BASE_URL: this.baseUrl,
      MONGODB_ATLAS_CLIENT_ID: this.credentials.MONGODB_ATLAS_CLIENT_ID!,
      MONGODB_ATLAS_CLIENT_SECRET: this.credentials.MONGODB_ATLAS_CLIENT_SECRET!,
      MONGODB_DATA_API_URL: `${this.baseUrl}/app/data-api/v1`,
      MONGODB_DATA_API_KEY: this.credentials.MONGODB_DATA_API_KEY!,
    };
  }

  protected override saveExtra(): unknown {
    return { tokens: [...this.tokens] };
  }

  protected override restoreExtra(extra: unknown): void {
    const tokens = (extra as { tokens?: Array<[string, number]> } | undefined)?.tokens ?? [];
    this.tokens = new Map(tokens);
  }

  protected override afterReset(): void {
    this.insertDocuments(this.seed.documents ?? []);
  }

  /** Seeded documents go straight into the engine's store, under a cluster the seed or engine has. */
  insertDocuments(documents: NonNullable<MongoAtlasSeed['documents']>): void {
    const clusters = this.engine.store.collection('mongoatlas.clusters', ['cluster_id', 'name']);
    const collections = this.engine.store.collection('mongoatlas.collections', [
      'cluster_id',
      'database',
      'name',
    ]);
    const databases = this.engine.store.collection('mongoatlas.databases', ['cluster_id', 'name']);
    const store = this.engine.store.collection('mongoatlas.documents', ['cluster_id', 'doc_id']);
    for (const [i, d] of documents.entries()) {
      const cluster = clusters.findOneBy('name', d.cluster);
      if (!cluster)
        throw new TwinInputError(400, `mongoatlas seed: "documents[${i}].cluster" names no cluster`);
      const clusterId = cluster.cluster_id as string;
      if (!databases.all().some((db) => db.cluster_id === clusterId && db.name === d.database))
        databases.insert({ cluster_id: clusterId, name: d.database });
      if (
        !collections
          .all()
          .some((c) => c.cluster_id === clusterId && c.database === d.database && c.name === d.collection)
      )
        collections.insert({ cluster_id: clusterId, database: d.database, name: d.collection });
      const docId = (d.document._id as string | undefined) ?? randomBytes(12).toString('hex');
      store.insert({
        cluster_id: clusterId,
        database: d.database,
        collection: d.collection,
        doc_id: docId,
        data: { ...d.document, _id: docId },
      });
    }
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as MongoAtlasSeed;
    this.engine.seedFromConfig(engineSeed(seed));
    this.insertDocuments(seed.documents ?? []);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  !!v && typeof v === 'object' && !Array.isArray(v);

/** Data API fields and the JSON type each must have when present. */
const DATA_API_FIELDS: Record<string, 'object' | 'objects' | 'number' | 'string'> = {
  dataSource: 'string',
  database: 'string',
  collection: 'string',
  filter: 'object',
  projection: 'object',
  sort: 'object',
  update: 'object',
  document: 'object',
  documents: 'objects',
  pipeline: 'objects',
  limit: 'number',
  skip: 'number',
};

/**
 * Why a body the engine would choke on (it reads fields of whatever JSON arrives, and answers 500 for
 * `null` or a string pipeline) is refused, as Atlas refuses ill-typed parameters; undefined when it may pass.
 */
function bodyProblem(pathname: string, body: unknown): string | undefined {
  if (!isObject(body)) return 'The request body must be a JSON object.';
  if (!pathname.startsWith('/app/data-api/')) return undefined;
  for (const [field, kind] of Object.entries(DATA_API_FIELDS)) {
    const value = body[field];
    if (value === undefined) continue;
    const ok =
      kind === 'object'
        ? isObject(value)
        : kind === 'objects'
          ? Array.isArray(value) && value.every(isObject)
          : kind === 'number'
            ? Number.isInteger(value) && (value as number) >= 0
            : typeof value === 'string';
    if (!ok)
      return `Invalid parameter ${field}: expected ${kind === 'objects' ? 'an array of objects' : kind === 'number' ? 'a non-negative integer' : `a${kind === 'object' ? 'n' : ''} ${kind}`}.`;
  }
  return undefined;
}

function engineSeed(seed: MongoAtlasSeed) {
  const { documents: _documents, ...rest } = seed;
  return rest;
}

export const mongoatlasTwin = engineTwinFactory(mongoatlasDescriptor, {
  newCredentials: () => ({
    MONGODB_ATLAS_CLIENT_ID: `mdb_sa_id_${randomBytes(12).toString('hex')}`,
    MONGODB_ATLAS_CLIENT_SECRET: randomToken('mdb_sa_sk_', 30),
    MONGODB_DATA_API_KEY: randomToken('', 48),
  }),
  engineSeed: (seed) => ({ mongoatlas: engineSeed(seed) }),
  driver: (engine, baseUrl, credentials, seed) => new MongoAtlasTwin(engine, baseUrl, credentials, seed),
  fresh: (twin, seed) => twin.insertDocuments(seed.documents ?? []),
});
