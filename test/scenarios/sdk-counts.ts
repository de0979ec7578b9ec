/** What the official SDKs show of a seeded twin, in the count vocabulary of presets.ts `promises`. */
import { Octokit } from '@octokit/rest';
// Each vendor's SDK but those every twin test loads anyway (Stripe, Octokit, Slack's) is imported where its
// counts are taken: seven test files import this module, and loading all thirteen SDKs held each one's
// first test back (twins/apple: 6.9 s alone, ~20 s with four files starting at once; 0.9 and 3 s now).
import type * as Okta from '@okta/okta-sdk-nodejs';
import Stripe from 'stripe';
import { WebClient } from '@slack/web-api';
import type { TwinEntry } from '../../server/twins/runtime/instance.ts';
import type { GitHubSeed } from '../../server/twins/vendors/github/seed.ts';
import { stripeClient } from '../twins/helpers.ts';

export type Counts = Record<string, number>;

/** What a GitHub client sees of the seeded repositories, in the promise vocabulary of presets.ts. */
export async function githubCounts(entry: TwinEntry, seed: GitHubSeed, diffs: string[]): Promise<Counts> {
  const octokit = new Octokit({ auth: entry.env_vars.GITHUB_TOKEN, baseUrl: entry.env_vars.GITHUB_API_URL });
  const c: Counts = {
    repos: 0,
    open_pulls: 0,
    closed_pulls: 0,
    open_issues: 0,
    closed_issues: 0,
    labels: 0,
    issue_comments: 0,
    pull_comments: 0,
    review_comments: 0,
  };
  for (const r of seed.repos ?? []) {
    const repo = { owner: r.owner, repo: r.name };
    await octokit.repos.get(repo);
    c.repos!++;
    const pulls = (await octokit.pulls.list({ ...repo, state: 'all', per_page: 100 })).data;
    for (const pull of pulls) {
      c[pull.state === 'open' ? 'open_pulls' : 'closed_pulls']!++;
      const number = pull.number;
      c.pull_comments! += (await octokit.issues.listComments({ ...repo, issue_number: number })).data.length;
      c.review_comments! += (
        await octokit.pulls.listReviewComments({ ...repo, pull_number: number })
      ).data.length;
      const files = (await octokit.pulls.listFiles({ ...repo, pull_number: number })).data;
      if (files.length) diffs.push(`${r.name}#${number}:${files.map((f) => f.filename).join(',')}`);
    }
    const issues = (await octokit.issues.listForRepo({ ...repo, state: 'all', per_page: 100 })).data;
    for (const issue of issues.filter((i) => !i.pull_request)) {
      c[issue.state === 'open' ? 'open_issues' : 'closed_issues']!++;
      c.issue_comments! += (
        await octokit.issues.listComments({ ...repo, issue_number: issue.number })
      ).data.length;
    }
    c.labels! += (await octokit.issues.listLabelsForRepo(repo)).data.length;
  }
  return c;
}

/** Counts, then confirms a PaymentIntent with each customer's default payment method (which adds intents). */
export async function stripeCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const stripe = stripeClient(env);
  const customers = (await stripe.customers.list({ limit: 100 })).data;
  const c: Counts = {
    customers: customers.length,
    products: (await stripe.products.list({ limit: 100 })).data.length,
    prices: (await stripe.prices.list({ limit: 100 })).data.length,
    payment_intents: (await stripe.paymentIntents.list({ limit: 100 })).data.length,
    declining_customers: 0,
  };
  for (const customer of customers) {
    const pm = customer.invoice_settings.default_payment_method;
    if (typeof pm !== 'string') continue;
    const attached = await stripe.customers.listPaymentMethods(customer.id);
    if (!attached.data.some((p) => p.id === pm)) throw new Error(`${pm} is not attached to ${customer.id}`);
    const result = await stripe.paymentIntents
      .create({ amount: 1000, currency: 'usd', customer: customer.id, payment_method: pm, confirm: true })
      .catch((e: unknown) => e);
    if (result instanceof Stripe.errors.StripeCardError) c.declining_customers!++;
    else if (result instanceof Error) throw result;
  }
  return c;
}

export async function slackCounts(entry: TwinEntry, seed: Record<string, any>): Promise<Counts> {
  const client = new WebClient(entry.env_vars.SLACK_BOT_TOKEN, {
    slackApiUrl: entry.env_vars.SLACK_API_URL,
    retryConfig: { retries: 0 },
  });
  const userNames = new Set<string>((seed.users ?? []).map((u: { name: string }) => u.name));
  const channelNames = new Set<string>((seed.channels ?? []).map((ch: { name: string }) => ch.name));
  const users = (await client.users.list({})).members ?? [];
  const channels = (
    await client.conversations.list({ types: 'public_channel,private_channel', limit: 1000 })
  ).channels!.filter((ch) => channelNames.has(ch.name!));
  let messages = 0;
  for (const ch of channels)
    messages += (await client.conversations.history({ channel: ch.id! })).messages!.length;
  return {
    users: users.filter((u) => userNames.has(u.name!) && !u.deleted).length,
    channels: channels.length,
    messages,
  };
}

/** What resend-node lists of a Resend twin: domains, contacts of every audience, emails. */
async function resendCounts(entry: TwinEntry): Promise<Counts> {
  const { Resend } = await import('resend');
  const resend = new Resend(entry.env_vars.RESEND_API_KEY, { baseUrl: entry.env_vars.RESEND_BASE_URL });
  const must = <T>(r: { data: T | null; error: unknown }): T => {
    if (!r.data) throw new Error(`resend: ${JSON.stringify(r.error)}`);
    return r.data;
  };
  let contacts = 0;
  for (const audience of must(await resend.audiences.list()).data)
    contacts += must(await resend.contacts.list({ audienceId: audience.id })).data.length;
  return {
    domains: must(await resend.domains.list()).data.length,
    contacts,
    emails: must(await resend.emails.list()).data.length,
  };
}

/** What twilio-node lists of a Twilio twin (its httpClient sends product hosts to TWILIO_BASE_URL). */
async function twilioCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const base = env.TWILIO_BASE_URL!;
  const { default: twilio } = await import('twilio');
  class TwinRequestClient extends twilio.RequestClient {
    override request<TData>(opts: Parameters<typeof twilio.RequestClient.prototype.request<TData>>[0]) {
      const uri = new URL(opts.uri);
      const product = uri.hostname.split('.')[0];
      opts.uri = `${base}${product === 'api' ? '' : `/${product}`}${uri.pathname}${uri.search}`;
      return super.request<TData>(opts);
    }
  }
  const client = twilio(env.TWILIO_ACCOUNT_SID, env.TWILIO_AUTH_TOKEN, {
    httpClient: new TwinRequestClient(),
  });
  return {
    phone_numbers: (await client.incomingPhoneNumbers.list()).length,
    verify_services: (await client.verify.v2.services.list()).length,
  };
}

/** What the AWS SDK's S3 client lists of an AWS twin: buckets and the objects in them. */
async function awsCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const { ListBucketsCommand, ListObjectsV2Command, S3Client } = await import('@aws-sdk/client-s3');
  const s3 = new S3Client({
    endpoint: env.AWS_ENDPOINT_URL_S3,
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
  });
  try {
    const buckets = (await s3.send(new ListBucketsCommand({}))).Buckets ?? [];
    let objects = 0;
    for (const bucket of buckets)
      objects += (await s3.send(new ListObjectsV2Command({ Bucket: bucket.Name }))).KeyCount ?? 0;
    return { buckets: buckets.length, objects };
  } finally {
    s3.destroy();
  }
}

/** What okta-sdk-nodejs lists of an Okta twin: users, groups other than the built-in ones, their members. */
async function oktaCounts(entry: TwinEntry): Promise<Counts> {
  const okta = await import('@okta/okta-sdk-nodejs');
  const client = new okta.Client({
    orgUrl: entry.env_vars.OKTA_CLIENT_ORGURL,
    token: entry.env_vars.OKTA_CLIENT_TOKEN,
    cacheMiddleware: null,
  } as ConstructorParameters<typeof okta.Client>[0]);
  const list = async <T>(collection: { each(fn: (item: T) => void): Promise<unknown> }) => {
    const items: T[] = [];
    await collection.each((item) => void items.push(item));
    return items;
  };
  const groups = (await list<Okta.Group>(await client.groupApi.listGroups())).filter(
    (g) => g.type !== 'BUILT_IN',
  );
  let memberships = 0;
  for (const group of groups)
    memberships += (await list<Okta.User>(await client.groupApi.listGroupUsers({ groupId: group.id! })))
      .length;
  const users = await list<Okta.User>(await client.userApi.listUsers());
  return { users: users.length, groups: groups.length, memberships };
}

/** What @vercel/sdk lists of a Vercel twin: teams, the projects in them, their environment variables. */
async function vercelCounts(entry: TwinEntry): Promise<Counts> {
  const { Vercel } = await import('@vercel/sdk');
  const vercel = new Vercel({
    bearerToken: entry.env_vars.VERCEL_TOKEN,
    serverURL: entry.env_vars.VERCEL_API_URL,
  });
  const teams = (await vercel.teams.getTeams({})).teams.map((team) => (team as { slug: string }).slug);
  let projects = 0;
  let envVars = 0;
  for (const slug of teams) {
    const listed = await vercel.projects.getProjects({ slug });
    for (const project of 'projects' in listed ? listed.projects : []) {
      projects += 1;
      const envs = await vercel.projects.filterProjectEnvs({ idOrName: project.id, slug });
      envVars += ('envs' in envs ? envs.envs : []).length;
    }
  }
  return { teams: teams.length, projects, env_vars: envVars };
}

/** What googleapis lists of a Google twin's first account (GOOGLE_REFRESH_TOKEN): messages, user labels. */
async function googleCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const { OAuth2Client } = await import('google-auth-library');
  const { gmail: gmailApi } = await import('@googleapis/gmail');
  const auth = new OAuth2Client({
    clientId: env.GOOGLE_CLIENT_ID,
    clientSecret: env.GOOGLE_CLIENT_SECRET,
    endpoints: { oauth2TokenUrl: env.GOOGLE_OAUTH2_TOKEN_URL },
  });
  auth.setCredentials({ refresh_token: env.GOOGLE_REFRESH_TOKEN });
  const gmail = gmailApi({ version: 'v1', auth, rootUrl: env.GOOGLE_API_ROOT_URL });
  const messages = (await gmail.users.messages.list({ userId: 'me', maxResults: 500 })).data.messages ?? [];
  const labels = (await gmail.users.labels.list({ userId: 'me' })).data.labels ?? [];
  return { messages: messages.length, labels: labels.filter((l) => l.type === 'user').length };
}

/**
 * What the Atlas Admin API v2 (with a service-account token) and the Data API list of a MongoDB Atlas twin:
 * projects and clusters (the engine's Project0 and Cluster0 included), documents in every collection.
 * MongoDB ships no Node client for either API; these are the HTTP flows Atlas documents.
 */
async function mongoatlasCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const basic = Buffer.from(`${env.MONGODB_ATLAS_CLIENT_ID}:${env.MONGODB_ATLAS_CLIENT_SECRET}`).toString(
    'base64',
  );
  const tokenRes = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${basic}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  const { access_token } = (await tokenRes.json()) as { access_token: string };
  const get = async <T>(path: string): Promise<{ results: T[] }> => {
    const res = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2${path}`, {
      headers: { authorization: `Bearer ${access_token}`, accept: 'application/vnd.atlas.2023-01-01+json' },
    });
    if (!res.ok) throw new Error(`mongoatlas ${path}: ${res.status}`);
    return (await res.json()) as { results: T[] };
  };
  const groups = (await get<{ id: string }>('/groups')).results;
  let clusters = 0;
  let documents = 0;
  for (const group of groups) {
    for (const cluster of (await get<{ name: string }>(`/groups/${group.id}/clusters`)).results) {
      clusters += 1;
      const base = `/groups/${group.id}/clusters/${cluster.name}/databases`;
      for (const db of (await get<{ databaseName: string }>(base)).results) {
        const cols = await get<{ collectionName: string }>(`${base}/${db.databaseName}/collections`);
        for (const col of cols.results) {
          const res = await fetch(`${env.MONGODB_DATA_API_URL}/action/find`, {
            method: 'POST',
            headers: { 'api-key': env.MONGODB_DATA_API_KEY!, 'content-type': 'application/json' },
            body: JSON.stringify({
              dataSource: cluster.name,
              database: db.databaseName,
              collection: col.collectionName,
            }),
          });
          documents += ((await res.json()) as { documents: unknown[] }).documents.length;
        }
      }
    }
  }
  return { projects: groups.length, clusters, documents };
}

/**
 * What the Microsoft Graph client lists of a Microsoft twin: its users, with an app-only token from the
 * client-credentials grant (the token rides in fetchOptions: the client sends it to https hosts only).
 */
async function microsoftCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const res = await fetch(env.AZURE_OAUTH2_TOKEN_URL!, {
    method: 'POST',
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: env.AZURE_CLIENT_ID!,
      client_secret: env.AZURE_CLIENT_SECRET!,
      scope: 'https://graph.microsoft.com/.default',
    }),
  });
  const { access_token } = (await res.json()) as { access_token: string };
  const { Client: GraphClient } = await import('@microsoft/microsoft-graph-client');
  const graph = GraphClient.init({
    baseUrl: env.MICROSOFT_GRAPH_BASE_URL,
    authProvider: (done) => done(null, access_token),
    fetchOptions: { headers: { authorization: `Bearer ${access_token}` } },
  });
  const users = (await graph.api('/users').get()) as { value: unknown[] };
  return { users: users.value.length };
}

/** What @linear/sdk lists of a Linear twin: teams and issues. */
async function linearCounts(entry: TwinEntry): Promise<Counts> {
  const { LinearClient } = await import('@linear/sdk');
  const linear = new LinearClient({
    apiKey: entry.env_vars.LINEAR_API_KEY,
    apiUrl: entry.env_vars.LINEAR_API_URL,
  });
  return { teams: (await linear.teams()).nodes.length, issues: (await linear.issues()).nodes.length };
}

/**
 * The Apple Accounts a Sign in with Apple twin offers on its account picker (Apple has no client SDK for
 * Node and no API that lists accounts; the picker is what a person signing in sees).
 */
async function appleCounts(entry: TwinEntry): Promise<Counts> {
  const page = await fetch(
    `${entry.env_vars.APPLE_ISSUER}/auth/authorize?client_id=${encodeURIComponent(entry.env_vars.APPLE_CLIENT_ID!)}`,
  );
  const html = await page.text();
  return { accounts: html.match(/name="email"/g)?.length ?? 0 };
}

/** What @clerk/backend lists of a Clerk twin: users, organizations, and the memberships in them. */
async function clerkCounts(entry: TwinEntry): Promise<Counts> {
  const { createClerkClient } = await import('@clerk/backend');
  const clerk = createClerkClient({
    secretKey: entry.env_vars.CLERK_SECRET_KEY,
    apiUrl: entry.env_vars.CLERK_API_URL,
  });
  const users = await clerk.users.getUserList({ limit: 500 });
  const orgs = await clerk.organizations.getOrganizationList({ limit: 500 });
  let memberships = 0;
  for (const org of orgs.data)
    memberships += (
      await clerk.organizations.getOrganizationMembershipList({ organizationId: org.id, limit: 500 })
    ).totalCount;
  return { users: users.totalCount, organizations: orgs.totalCount, memberships };
}

/** The counts of one twin, measured with its SDK. */
export function countsFor(
  twin: string,
  entry: TwinEntry,
  seed: unknown,
  diffs: string[] = [],
): Promise<Counts> {
  if (twin === 'github') return githubCounts(entry, seed as GitHubSeed, diffs);
  if (twin === 'stripe') return stripeCounts(entry);
  if (twin === 'okta') return oktaCounts(entry);
  if (twin === 'aws') return awsCounts(entry);
  if (twin === 'resend') return resendCounts(entry);
  if (twin === 'twilio') return twilioCounts(entry);
  if (twin === 'linear') return linearCounts(entry);
  if (twin === 'vercel') return vercelCounts(entry);
  if (twin === 'mongoatlas') return mongoatlasCounts(entry);
  if (twin === 'google') return googleCounts(entry);
  if (twin === 'microsoft') return microsoftCounts(entry);
  if (twin === 'apple') return appleCounts(entry);
  if (twin === 'clerk') return clerkCounts(entry);
  return slackCounts(entry, seed as Record<string, any>);
}
