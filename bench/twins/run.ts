/**
 * Twin layer benchmark: instance start time, memory per instance, p50/p99 of a typical SDK call per twin,
 * and our layer's overhead against the emulate engine used bare (its own server), in the same run.
 * Run: npx tsx bench/twins/run.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Octokit } from '@octokit/rest';
import { WebClient } from '@slack/web-api';
import Stripe from 'stripe';
import { TwinHost } from '../../server/twins/host.ts';
import { startBareEngine } from '../../server/twins/engine/emulate.ts';

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
  const host = new TwinHost({ dataDir, publicHost: '127.0.0.1' });
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

await main();
