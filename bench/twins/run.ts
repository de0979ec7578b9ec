/**
 * Twin layer benchmark: instance start time, memory per instance, p50/p99 of a typical SDK call per twin,
 * and our layer's overhead against the emulate engine used bare (its own server), in the same run.
 * Then the same SDK calls made by an app (bench/twins/sdk-app.ts, bundled) against (a) an in-process
 * TwinHost (the baseline), (b) the twins in a sandbox's pod, from inside the sandbox (the app deployed
 * with full isolation), (c) the sandbox's twins from the host through the router.
 * First, every twin in the registry against the bare engine serving the same call (bench/twins/ratio.ts).
 * Then what a durable write costs: journalled before the answer vs snapshotted after (bench/twins/durable.ts).
 * Last, an intercepted HTTPS call to api.stripe.com against the plain base-URL one (bench/twins/intercepted.ts).
 * Run: npx tsx bench/twins/run.ts        BENCH_TWINS_PART=ratio|sdk|oop|durable|intercept: only that part
 * Ratio knobs: BENCH_RATIO_CALLS (200), BENCH_RATIO_ROUNDS (3), BENCH_RATIO_WARMUP (600), BENCH_RATIO_TWINS=a,b
 */
import '../../test/helpers/sandbox-hosts.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Octokit } from '@octokit/rest';
import { WebClient } from '@slack/web-api';
import Stripe from 'stripe';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { startBareEngine } from '../../server/twins/engine/emulate.ts';
import { benchTwinbox, ratio, sourceTwin } from '../kit.ts';
import { durableTable } from './durable.ts';
import { interceptedTable } from './intercepted.ts';
import { ratioTable } from './ratio.ts';
import { twinFactories } from '../../server/twins/registry.ts';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const WARMUP = 100;
const INSTANCES = Number(process.env.BENCH_INSTANCES ?? 20);

const ghSeed = {
  users: [{ login: 'octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'app' }],
};

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const fmt = (n: number) => n.toFixed(2);

async function latency(call: () => Promise<unknown>): Promise<{ p50: number; p99: number; rps: number }> {
  for (let i = 0; i < WARMUP; i++) await call();
  const times: number[] = [];
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  const total = performance.now() - started;
  times.sort((a, b) => a - b);
  return { p50: pct(times, 50), p99: pct(times, 99), rps: (CALLS / total) * 1000 };
}

function heapMb(): number {
  gc();
  gc();
  const m = process.memoryUsage();
  return (m.heapUsed + m.external + m.arrayBuffers) / 1024 / 1024;
}

function stripeClient(env: Record<string, string>, key = env.STRIPE_SECRET_KEY!) {
  return new Stripe(key, {
    host: env.STRIPE_API_HOST,
    port: Number(env.STRIPE_API_PORT),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

const twins = ['github', 'stripe', 'slack'] as const;
const seeds: Record<string, unknown> = { github: ghSeed };

async function main() {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-'));
  const host = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const rows: string[] = [];
  try {
    // Load engine modules once so start times measure instances, not first imports.
    await host.start('warm', [...twins], { adminToken: 'bench', seeds });
    await host.stop('warm', { purge: true });

    rows.push(
      '## Instance start and memory',
      '',
      '| twin | start p50 ms | start max ms | memory per instance MB |',
      '|---|---|---|---|',
    );
    for (const twin of twins) {
      const before = heapMb();
      const starts: number[] = [];
      for (let i = 0; i < INSTANCES; i++) {
        const t0 = performance.now();
        await host.start(`${twin}-${i}`, [twin], { adminToken: 'bench', seeds });
        starts.push(performance.now() - t0);
      }
      const perInstance = (heapMb() - before) / INSTANCES;
      starts.sort((a, b) => a - b);
      rows.push(`| ${twin} | ${fmt(pct(starts, 50))} | ${fmt(starts.at(-1)!)} | ${fmt(perInstance)} |`);
      for (let i = 1; i < INSTANCES; i++) await host.stop(`${twin}-${i}`, { purge: true });
    }

    rows.push(
      '',
      `## SDK call latency (${CALLS} sequential calls after ${WARMUP} warm-up, one client)`,
      '',
      '| twin | call | Twinbox p50 ms | Twinbox p99 ms | Twinbox req/s | bare engine p50 ms | bare engine p99 ms | bare req/s | p50 overhead ms |',
      '|---|---|---|---|---|---|---|---|---|',
    );

    // GitHub: repos.get
    const gh = host.get('github-0')!.github!;
    const octo = new Octokit({ auth: gh.env_vars.GITHUB_TOKEN, baseUrl: gh.base_url });
    const ours = await latency(() => octo.repos.get({ owner: 'octocat', repo: 'app' }));
    const bareGh = await startBareEngine('github', {
      tokens: { bench: { login: 'octocat' } },
      github: ghSeed,
    });
    const octoBare = new Octokit({ auth: 'bench', baseUrl: bareGh.url.replace('localhost', '127.0.0.1') });
    const bare = await latency(() => octoBare.repos.get({ owner: 'octocat', repo: 'app' }));
    await bareGh.close();
    rows.push(
      `| github | repos.get | ${fmt(ours.p50)} | ${fmt(ours.p99)} | ${ours.rps.toFixed(0)} | ${fmt(bare.p50)} | ${fmt(bare.p99)} | ${bare.rps.toFixed(0)} | ${fmt(ours.p50 - bare.p50)} |`,
    );

    // Stripe: customers.retrieve (bare = emulate's own Stripe service, which we do not use: see docs)
    const st = host.get('stripe-0')!.stripe!;
    const stripe = stripeClient(st.env_vars);
    const customer = await stripe.customers.create({ email: 'bench@example.com' });
    const oursSt = await latency(() => stripe.customers.retrieve(customer.id));
    const bareSt = await startBareEngine('stripe');
    const bareUrl = new URL(bareSt.url);
    const stripeBare = new Stripe('sk_test_bench', {
      host: '127.0.0.1',
      port: Number(bareUrl.port),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
    const bareCustomer = await stripeBare.customers.create({ email: 'bench@example.com' });
    const bareStR = await latency(() => stripeBare.customers.retrieve(bareCustomer.id));
    await bareSt.close();
    rows.push(
      `| stripe | customers.retrieve | ${fmt(oursSt.p50)} | ${fmt(oursSt.p99)} | ${oursSt.rps.toFixed(0)} | ${fmt(bareStR.p50)} | ${fmt(bareStR.p99)} | ${bareStR.rps.toFixed(0)} | ${fmt(oursSt.p50 - bareStR.p50)} |`,
    );

    // Slack: chat.postMessage
    const sl = host.get('slack-0')!.slack!;
    const slack = new WebClient(sl.env_vars.SLACK_BOT_TOKEN, {
      slackApiUrl: sl.env_vars.SLACK_API_URL,
      retryConfig: { retries: 0 },
    });
    const channel = (await slack.conversations.list()).channels!.find((c) => c.name === 'general')!.id!;
    const oursSl = await latency(() => slack.auth.test());
    const bareSl = await startBareEngine('slack', { tokens: { 'xoxb-bench': { login: 'U000000001' } } });
    const slackBare = new WebClient('xoxb-bench', {
      slackApiUrl: `${bareSl.url.replace('localhost', '127.0.0.1')}/api/`,
      retryConfig: { retries: 0 },
    });
    const bareSlR = await latency(() => slackBare.auth.test());
    await bareSl.close();
    rows.push(
      `| slack | auth.test | ${fmt(oursSl.p50)} | ${fmt(oursSl.p99)} | ${oursSl.rps.toFixed(0)} | ${fmt(bareSlR.p50)} | ${fmt(bareSlR.p99)} | ${bareSlR.rps.toFixed(0)} | ${fmt(oursSl.p50 - bareSlR.p50)} |`,
    );
    const post = await latency(() => slack.chat.postMessage({ channel, text: 'bench' }));
    rows.push(
      `| slack | chat.postMessage (writes, persisted) | ${fmt(post.p50)} | ${fmt(post.p99)} | ${post.rps.toFixed(0)} | | | | |`,
    );
    const pay = await latency(() =>
      stripe.paymentIntents.create({
        amount: 100,
        currency: 'usd',
        payment_method: 'pm_card_visa',
        confirm: true,
      }),
    );
    rows.push(
      `| stripe | paymentIntents.create+confirm (writes, persisted) | ${fmt(pay.p50)} | ${fmt(pay.p99)} | ${pay.rps.toFixed(0)} | | | | |`,
    );
  } finally {
    await host.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(
    `# Twin benchmark (${cpus().length} cores, Node ${process.version}, ${new Date().toISOString().slice(0, 10)})\n`,
  );
  console.log(rows.join('\n'));
}

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const OPS = [
  'github users.getAuthenticated',
  'stripe customers.retrieve',
  'stripe customers.create',
  'slack auth.test',
];

interface AppResult {
  calls: number;
  p50: number;
  p99: number;
  rps: number;
}

/** Runs the bundled SDK app on this host with `env`; resolves with its base URL. */
async function startApp(
  bundle: string,
  env: Record<string, string>,
): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [bundle], {
    env: { PATH: process.env.PATH, NODE_ENV: 'production', ...env, PORT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the SDK app exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

async function runOp(base: string, op: string): Promise<AppResult> {
  const response = await fetch(`${base}/run?op=${encodeURIComponent(op)}&calls=${CALLS}&warmup=${WARMUP}`);
  if (!response.ok) throw new Error(`${op} at ${base}: ${response.status} ${await response.text()}`);
  return (await response.json()) as AppResult;
}

/** Twin SDK calls from an app: in-process TwinHost vs the sandbox's pod (inside) vs through the router. */
async function outOfProcess(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), 'twinbox-bench-sdk-'));
  const built = await build({
    entryPoints: [new URL('./sdk-app.ts', import.meta.url).pathname],
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    minify: true,
    outfile: join(work, 'app.cjs'),
    logLevel: 'warning',
  });
  if (built.errors.length) throw new Error('could not bundle bench/twins/sdk-app.ts');
  const bundle = join(work, 'app.cjs');
  const files = {
    'package.json': JSON.stringify({ name: 'sdk-bench', private: true, scripts: { start: 'node app.cjs' } }),
    'app.cjs': await readFile(bundle, 'utf8'),
  };

  const host = new TwinHost({
    factories: twinFactories,
    dataDir: join(work, 'twins'),
    publicHost: '127.0.0.1',
  });
  const gh = await sourceTwin({ 'sdk-bench': files });
  const bt = await benchTwinbox(gh);
  const children: ChildProcess[] = [];
  try {
    // (a) the baseline: the twins in this process (a TwinHost, as Twinbox ran them before pods).
    const local = await host.start('bench-oop', ['github', 'stripe', 'slack'], { adminToken: 'bench' });
    const localEnv = Object.assign({}, ...Object.values(local).map((entry) => entry.env_vars));
    const a = await startApp(bundle, localEnv);
    children.push(a.child);

    // (b) the same app deployed in a sandbox: its twins in the pod, called inside the sandbox's namespace.
    // (c) gets a sandbox of its own: the GitHub twin allows a token 5,000 calls an hour, as GitHub does,
    // and (b) and (c) together make more.
    const deploy = async () => {
      const deployed = await bt.deploy({
        repo: 'octocat/sdk-bench',
        branch: 'main',
        twins: ['github', 'stripe', 'slack'],
      });
      if (deployed.record.status !== 'ready')
        throw new Error(`the SDK app did not deploy: ${deployed.record.status} ${deployed.record.error}`);
      return deployed;
    };
    const deployed = await deploy();
    const forRouter = await deploy();
    const twins = forRouter.record.twins;

    // (c) the same app on this host, calling a sandbox's twins at their public URLs (the router).
    const c = await startApp(bundle, {
      GITHUB_API_URL: twins.github!.base_url,
      GITHUB_TOKEN: twins.github!.env_vars.GITHUB_TOKEN!,
      STRIPE_API_BASE: twins.stripe!.base_url,
      STRIPE_SECRET_KEY: twins.stripe!.env_vars.STRIPE_SECRET_KEY!,
      SLACK_API_URL: `${twins.slack!.base_url}/api/`,
      SLACK_BOT_TOKEN: twins.slack!.env_vars.SLACK_BOT_TOKEN!,
    });
    children.push(c.child);

    const targets = { a: a.url, b: deployed.record.app_url!, c: c.url };
    type Target = keyof typeof targets;
    const results: Record<Target, Record<string, AppResult[]>> = { a: {}, b: {}, c: {} };
    // Rounds, and within a round interleaved per call, so a slow patch of the machine hits all three
    // alike; one round's p50 moved by up to 40% between runs, the median of the rounds much less.
    for (let round = 0; round < ROUNDS; round++)
      for (const op of OPS)
        for (const name of Object.keys(targets) as Target[])
          (results[name][op] ??= []).push(await runOp(targets[name], op));
    const median = (values: number[]) =>
      pct(
        values.toSorted((x, y) => x - y),
        50,
      );
    const stat = (name: Target, op: string) => ({
      p50: median(results[name][op]!.map((r) => r.p50)),
      p99: median(results[name][op]!.map((r) => r.p99)),
    });

    console.log(
      `\n## Twin SDK calls from an app, in-process twins vs the sandbox's pod (${ROUNDS} rounds of ${CALLS} sequential calls after ${WARMUP} warm-up; median of the rounds)\n`,
    );
    console.log(
      `Sandbox isolation: ${deployed.record.isolation}; the app: node ${process.version}, one bundle (stripe, @octokit/rest, @slack/web-api).\n`,
    );
    console.log(
      '| call | (a) in-process TwinHost p50 / p99 ms | (b) pod, from inside the sandbox p50 / p99 ms | (b)/(a) p50 | (b)/(a) p50 per round | (c) from the host via the router p50 / p99 ms | (c)/(a) p50 |',
    );
    console.log('|---|---|---|---:|---|---|---:|');
    for (const op of OPS) {
      const [ra, rb, rc] = [stat('a', op), stat('b', op), stat('c', op)];
      const rounds = results.b[op]!.map((r, i) => ratio(r.p50, results.a[op]![i]!.p50)).join(', ');
      console.log(
        `| ${op} | ${fmt(ra.p50)} / ${fmt(ra.p99)} | ${fmt(rb.p50)} / ${fmt(rb.p99)} | ${ratio(rb.p50, ra.p50)} | ${rounds} | ${fmt(rc.p50)} / ${fmt(rc.p99)} | ${ratio(rc.p50, ra.p50)} |`,
      );
    }
    await Promise.all([bt.del(deployed.id), bt.del(forRouter.id)]);
  } finally {
    for (const child of children) child.kill();
    await bt.close();
    await gh.close();
    await host.close();
    await rm(work, { recursive: true, force: true });
  }
}

const part = process.env.BENCH_TWINS_PART;
if (!part || part === 'ratio') await ratioTable();
if (!part || part === 'sdk') await main();
if (!part || part === 'oop') await outOfProcess();
if (!part || part === 'durable') await durableTable();
if (!part || part === 'intercept') console.log((await interceptedTable()).join('\n'));
