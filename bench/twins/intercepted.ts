/**
 * What interception costs (issue 22): the same stripe-node call, `customers.retrieve`, made (a) over the
 * plain base-URL variables (http to the twin's port) and (b) as an unmodified app makes it inside a sandbox,
 * HTTPS to `api.stripe.com`, through the pod's front door (server/pod/front-door.ts), its TLS terminated
 * with a certificate of the sandbox CA. Both in this process, alternated in rounds, so the ratio is ours:
 * TLS (with keep-alive and session reuse, as Node's agent does) and the door's lookup. Also what making the
 * CA and the first certificate costs (the pod makes its CA at its start, before any deploy asks for it).
 * Run: BENCH_TWINS_PART=intercept npx tsx bench/twins/run.ts   Knobs: BENCH_CALLS (1000), BENCH_ROUNDS (3)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent as HttpAgent } from 'node:http';
import { Agent } from 'node:https';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { FrontDoor } from '../../server/pod/front-door.ts';
import { SandboxCa } from '../../server/pod/sandbox-ca.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import { pct } from '../kit.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP = 100;

async function p50(call: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < WARMUP; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return pct(times, 50);
}

export async function interceptedTable(): Promise<string[]> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-intercept-'));
  const host = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const door = createServer();
  try {
    const caStarts: number[] = [];
    const issues: number[] = [];
    let ca: SandboxCa | undefined;
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now();
      ca = await SandboxCa.create(`bench-${i}`);
      caStarts.push(performance.now() - t0);
      const t1 = performance.now();
      await ca.contextFor('api.stripe.com');
      issues.push(performance.now() - t1);
    }
    const entry = (await host.start('bench', ['stripe'], { adminToken: 'bench' })).stripe!;
    const front = new FrontDoor(
      host,
      Promise.resolve(ca!),
      () => {},
      (address) => address,
    );
    // The door as the pod's guard hands it connections: this port stands for 443 inside the namespace.
    door.on('connection', (socket) => front.accept(socket, 443));
    await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
    const doorPort = (door.address() as AddressInfo).port;

    const key = entry.env_vars.STRIPE_SECRET_KEY!;
    const plain = new Stripe(key, {
      host: '127.0.0.1',
      port: Number(new URL(entry.base_url).port),
      protocol: 'http',
      // Keep-alive on both sides, as stripe-node's own default agents have it.
      httpAgent: new HttpAgent({ keepAlive: true }),
      maxNetworkRetries: 0,
    });
    // What the app's default client does inside: api.stripe.com over HTTPS, trusting the sandbox CA
    // (NODE_EXTRA_CA_CERTS there), its name resolved to the pod (the sandbox's DNS there).
    const agent = new Agent({
      keepAlive: true,
      ca: ca!.certificatePem,
      lookup: (_name, options, done) =>
        (options as { all?: boolean }).all
          ? (done as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
              { address: '127.0.0.1', family: 4 },
            ])
          : (done as (e: null, a: string, f: number) => void)(null, '127.0.0.1', 4),
    });
    const intercepted = new Stripe(key, { port: doorPort, httpAgent: agent, maxNetworkRetries: 0 });
    const customer = await intercepted.customers.create({ email: 'bench@example.com' });

    const plainRuns: number[] = [];
    const interceptedRuns: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      plainRuns.push(await p50(() => plain.customers.retrieve(customer.id)));
      interceptedRuns.push(await p50(() => intercepted.customers.retrieve(customer.id)));
    }
    agent.destroy();
    const median = (values: number[]) => pct(values, 50);
    const a = median(plainRuns);
    const b = median(interceptedRuns);
    return [
      `## Interception (stripe-node \`customers.retrieve\`, ${CALLS} calls x ${ROUNDS} rounds, median of the rounds' p50)`,
      '',
      '| path | p50 ms | ratio |',
      '|---|---|---|',
      `| plain base-URL variables (http to the twin's port) | ${a.toFixed(3)} | 1.00x |`,
      `| api.stripe.com over HTTPS through the pod's front door | ${b.toFixed(3)} | ${(b / a).toFixed(2)}x |`,
      '',
      `Making a sandbox CA: p50 ${pct(caStarts, 50).toFixed(1)} ms (at the pod's start, ahead of deploys); ` +
        `a certificate for one name: p50 ${pct(issues, 50).toFixed(1)} ms (at the first TLS connection to it).`,
    ];
  } finally {
    door.close();
    await host.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}
