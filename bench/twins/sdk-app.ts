/**
 * The client side of the twin SDK benchmark, as an app: the official SDKs (stripe, @octokit/rest,
 * @slack/web-api) pointed at the twins by the variables a sandbox gets, timing sequential calls.
 * bench/twins/run.ts bundles it with esbuild (one file, no install step) and runs the very same bundle
 * (a) on the host against an in-process TwinHost, (b) deployed in a sandbox against the twins in its pod,
 * (c) on the host against the sandbox's twins through the router.
 *
 *   GET /healthz                       ok
 *   GET /run?op=<op>&calls=N&warmup=W  {op, calls, p50, p99, rps} in ms; calls capped and time-bounded
 */
import dns from 'node:dns';
import { createServer } from 'node:http';
import { Octokit } from '@octokit/rest';
import { WebClient } from '@slack/web-api';
import Stripe from 'stripe';

const env = process.env;

// On the host (row c) the twins' URLs are `<id>--<twin>.localhost`, which Node's resolver does not
// resolve (browsers and curl do). Inside a sandbox the URLs are 127.0.0.1 and this never applies.
const lookup = dns.lookup;
(dns as { lookup: unknown }).lookup = (hostname: string, options: unknown, callback?: unknown) => {
  const cb = (typeof options === 'function' ? options : callback) as (...args: unknown[]) => void;
  if (/\.localhost\.?$/i.test(hostname)) {
    if (typeof options === 'object' && (options as { all?: boolean } | null)?.all)
      return process.nextTick(cb, null, [{ address: '127.0.0.1', family: 4 }]);
    return process.nextTick(cb, null, '127.0.0.1', 4);
  }
  return (lookup as (...args: unknown[]) => void).call(dns, hostname, options, callback);
};

const stripeBase = new URL(env.STRIPE_API_BASE!);
const stripe = new Stripe(env.STRIPE_SECRET_KEY!, {
  host: stripeBase.hostname,
  port: Number(stripeBase.port || 80),
  protocol: 'http',
  maxNetworkRetries: 0,
});
const octokit = new Octokit({ auth: env.GITHUB_TOKEN, baseUrl: env.GITHUB_API_URL });
const slack = new WebClient(env.SLACK_BOT_TOKEN, {
  slackApiUrl: env.SLACK_API_URL,
  retryConfig: { retries: 0 },
});

let customerId: string | undefined;
const ops: Record<string, () => Promise<unknown>> = {
  'github users.getAuthenticated': () => octokit.users.getAuthenticated(),
  'stripe customers.create': async () => {
    customerId = (await stripe.customers.create({ email: 'bench@example.com' })).id;
  },
  'stripe customers.retrieve': async () => {
    customerId ??= (await stripe.customers.create({ email: 'bench@example.com' })).id;
    return stripe.customers.retrieve(customerId);
  },
  'slack auth.test': () => slack.auth.test(),
};

const MAX_CALLS = 5000;
const MAX_MS = 60_000;

async function measure(call: () => Promise<unknown>, calls: number, warmup: number) {
  const deadline = performance.now() + MAX_MS;
  for (let i = 0; i < warmup && performance.now() < deadline; i++) await call();
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < calls && performance.now() < deadline; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  const total = performance.now() - started;
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!;
  return { calls: times.length, p50: pct(50), p99: pct(99), rps: (times.length / total) * 1000 };
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://app');
  if (url.pathname === '/healthz') return res.end('ok');
  if (url.pathname !== '/run') return res.writeHead(404).end();
  const op = url.searchParams.get('op') ?? '';
  const call = ops[op];
  if (!call) return res.writeHead(400).end(`op is one of: ${Object.keys(ops).join(', ')}`);
  const calls = Math.min(MAX_CALLS, Number(url.searchParams.get('calls') ?? 1000));
  const warmup = Math.min(MAX_CALLS, Number(url.searchParams.get('warmup') ?? 100));
  measure(call, calls, warmup).then(
    (result) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ op, ...result }));
    },
    (error: Error) => res.writeHead(502).end(`${op}: ${error.message}`),
  );
});
server.listen(Number(env.PORT), '127.0.0.1', () => {
  const address = server.address();
  console.log(`listening ${typeof address === 'object' && address ? address.port : env.PORT}`);
});
