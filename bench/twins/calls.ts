/**
 * One typical call per twin, made with the vendor's official SDK client (the same clients as
 * test/twins/<name>.test.ts), built from a twin's variables. `prepare` gets the variables with the twin's
 * origin swapped for the server under test (the twin, emulate's bare engine, or a canned replay), does
 * any setup through the same SDK, and returns the call the benchmark times.
 * Calls that answer an error status reject, so a baseline that cannot serve the call is noticed.
 */
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { createClerkClient } from '@clerk/backend';
import { gmail as gmailApi } from '@googleapis/gmail';
import { LinearClient } from '@linear/sdk';
import {
  AuthenticationHandler,
  Client as GraphClient,
  CustomAuthenticationProvider,
  HTTPMessageHandler,
} from '@microsoft/microsoft-graph-client';
import { Octokit } from '@octokit/rest';
import * as okta from '@okta/okta-sdk-nodejs';
import { WebClient } from '@slack/web-api';
import { Vercel } from '@vercel/sdk';
import { OAuth2Client } from 'google-auth-library';
import { Resend } from 'resend';
import Stripe from 'stripe';
import twilio from 'twilio';

export type Env = Record<string, string>;
export type Call = () => Promise<unknown>;

export interface TwinCall {
  /** The SDK call timed, as the table shows it. */
  call: string;
  /** The twin's seed (TwinHost seeds), when the call needs data the default seed lacks. */
  seed?: unknown;
  /**
   * emulate's seed for the bare engine serving the same data; a function of the twin's variables when the
   * engine must know the same credentials (Twilio's Account SID and Auth Token).
   */
  bareSeed?: Record<string, unknown> | ((env: Env) => Record<string, unknown>);
  prepare(env: Env): Promise<Call>;
}

/** Rejects on an error status: fetch-based clients (Atlas, Apple) do not. */
async function ok(res: Response): Promise<unknown> {
  const body = await res.text();
  if (!res.ok) throw new Error(`${res.status} ${body.slice(0, 200)}`);
  return body;
}

/** twilio-node sends to api.twilio.com; an app on a twin swaps the host as the tests do. */
class TwinRequestClient extends twilio.RequestClient {
  constructor(private readonly base: string) {
    super();
  }
  override async request<TData>(opts: Parameters<typeof twilio.RequestClient.prototype.request<TData>>[0]) {
    const uri = new URL(opts.uri);
    const product = uri.hostname.split('.')[0];
    opts.uri = `${this.base}${product === 'api' ? '' : `/${product}`}${uri.pathname}${uri.search}`;
    return super.request<TData>(opts);
  }
}

function withEnv<T>(vars: Env, make: () => T): T {
  const before = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return make();
  } finally {
    for (const [k, v] of Object.entries(before)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

const ghSeed = {
  users: [{ login: 'octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'app' }],
};
const oktaSeed = { users: [{ login: 'ada@acme.example.com', first_name: 'Ada', last_name: 'Lovelace' }] };

export const twinCalls: Record<string, TwinCall> = {
  github: {
    call: 'repos.get',
    seed: ghSeed,
    bareSeed: { github: ghSeed },
    async prepare(env) {
      const octo = new Octokit({ auth: env.GITHUB_TOKEN, baseUrl: env.GITHUB_API_URL });
      return () => octo.repos.get({ owner: 'octocat', repo: 'app' });
    },
  },
  stripe: {
    call: 'customers.retrieve',
    async prepare(env) {
      const url = new URL(env.STRIPE_API_BASE!);
      const stripe = new Stripe(env.STRIPE_SECRET_KEY!, {
        host: url.hostname,
        port: Number(url.port),
        protocol: 'http',
        maxNetworkRetries: 0,
      });
      const customer = await stripe.customers.create({ email: 'bench@example.com' });
      return () => stripe.customers.retrieve(customer.id);
    },
  },
  slack: {
    call: 'auth.test',
    async prepare(env) {
      const slack = new WebClient(env.SLACK_BOT_TOKEN, {
        slackApiUrl: env.SLACK_API_URL,
        retryConfig: { retries: 0 },
      });
      return () => slack.auth.test();
    },
  },
  resend: {
    call: 'domains.list',
    // The twin's default seed (one domain) given to the bare engine too: unseeded, it listed no domain
    // (27 bytes against the twin's 650), and the ratio compared unequal work.
    bareSeed: { resend: { domains: [{ name: 'example.com' }] } },
    async prepare(env) {
      const resend = withEnv({ RESEND_BASE_URL: env.RESEND_BASE_URL! }, () => new Resend(env.RESEND_API_KEY));
      return async () => {
        const { error } = await resend.domains.list();
        if (error) throw new Error(error.message);
      };
    },
  },
  twilio: {
    call: 'api.v2010.accounts(sid).fetch',
    // The engine's own account, with the twin's credentials: without it the engine answers 401.
    bareSeed: (env) => ({
      twilio: { account: { sid: env.TWILIO_ACCOUNT_SID, auth_token: env.TWILIO_AUTH_TOKEN } },
    }),
    async prepare(env) {
      const client = twilio(env.TWILIO_ACCOUNT_SID, env.TWILIO_AUTH_TOKEN, {
        accountSid: env.TWILIO_ACCOUNT_SID,
        httpClient: new TwinRequestClient(env.TWILIO_BASE_URL!),
      });
      return () => client.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch();
    },
  },
  aws: {
    call: 'STS GetCallerIdentity',
    async prepare(env) {
      const sts = new STSClient({
        maxAttempts: 1,
        region: env.AWS_REGION,
        endpoint: env.AWS_ENDPOINT_URL,
        credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
      });
      return () => sts.send(new GetCallerIdentityCommand({}));
    },
  },
  okta: {
    call: 'userApi.getUser',
    seed: oktaSeed,
    bareSeed: { okta: oktaSeed },
    async prepare(env) {
      const client = new okta.Client({
        orgUrl: env.OKTA_CLIENT_ORGURL,
        token: env.OKTA_CLIENT_TOKEN,
        cacheMiddleware: null,
      } as ConstructorParameters<typeof okta.Client>[0]);
      return () => client.userApi.getUser({ userId: 'ada@acme.example.com' });
    },
  },
  vercel: {
    call: 'user.getAuthUser',
    async prepare(env) {
      const vercel = new Vercel({ bearerToken: env.VERCEL_TOKEN, serverURL: env.VERCEL_API_URL });
      return () => vercel.user.getAuthUser();
    },
  },
  mongoatlas: {
    call: 'GET /api/atlas/v2/groups (fetch; Atlas has no official Node Admin SDK)',
    async prepare(env) {
      const basic = Buffer.from(`${env.MONGODB_ATLAS_CLIENT_ID}:${env.MONGODB_ATLAS_CLIENT_SECRET}`);
      const res = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/oauth/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${basic.toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: 'grant_type=client_credentials',
      });
      const { access_token } = JSON.parse((await ok(res)) as string) as { access_token: string };
      return async () =>
        ok(
          await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2/groups`, {
            headers: {
              authorization: `Bearer ${access_token}`,
              accept: 'application/vnd.atlas.2023-01-01+json',
            },
          }),
        );
    },
  },
  google: {
    call: 'gmail.users.getProfile',
    async prepare(env) {
      const auth = new OAuth2Client({
        clientId: env.GOOGLE_CLIENT_ID,
        clientSecret: env.GOOGLE_CLIENT_SECRET,
        endpoints: { oauth2TokenUrl: env.GOOGLE_OAUTH2_TOKEN_URL },
      });
      auth.setCredentials({ refresh_token: env.GOOGLE_REFRESH_TOKEN });
      // One refresh up front; the timed call is the Gmail read with the access token it gave.
      await auth.getAccessToken();
      const gmail = gmailApi({ version: 'v1', auth, rootUrl: env.GOOGLE_API_ROOT_URL });
      return () => gmail.users.getProfile({ userId: 'me' });
    },
  },
  microsoft: {
    call: "graph.api('/users').get",
    async prepare(env) {
      const res = await fetch(env.AZURE_OAUTH2_TOKEN_URL!, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: env.AZURE_CLIENT_ID!,
          client_secret: env.AZURE_CLIENT_SECRET!,
          scope: 'https://graph.microsoft.com/.default',
        }),
      });
      const { access_token: token } = JSON.parse((await ok(res)) as string) as { access_token: string };
      const graph = GraphClient.initWithMiddleware({
        baseUrl: env.MICROSOFT_GRAPH_BASE_URL,
        middleware: [
          new AuthenticationHandler(new CustomAuthenticationProvider((done) => done(null, token))),
          new HTTPMessageHandler(),
        ],
        fetchOptions: { headers: { authorization: `Bearer ${token}` } },
      });
      return () => graph.api('/users').get();
    },
  },
  apple: {
    call: 'GET /auth/keys (the JWKS jose fetches; Apple has no server SDK)',
    async prepare(env) {
      return async () => ok(await fetch(`${env.APPLE_ISSUER}/auth/keys`));
    },
  },
  linear: {
    call: 'client.viewer',
    async prepare(env) {
      const linear = new LinearClient({ apiKey: env.LINEAR_API_KEY, apiUrl: env.LINEAR_API_URL });
      return () => linear.viewer;
    },
  },
  clerk: {
    call: 'users.getUserList',
    async prepare(env) {
      const clerk = createClerkClient({
        secretKey: env.CLERK_SECRET_KEY,
        publishableKey: env.CLERK_PUBLISHABLE_KEY,
        apiUrl: env.CLERK_API_URL,
      });
      return () => clerk.users.getUserList();
    },
  },
};
