import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { twinFactories } from '../../server/twins/registry.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinSocketPath } from '../../server/twins/runtime/paths.ts';

// A real Stripe twin behind the router benchmark, listening on its own Unix socket as in a sandbox's pod,
// with one customer to read. Prints the socket, the secret key and the customer's id.
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-twin-'));
const socketDir = process.env.BENCH_SOCKET_DIR!;
const host = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1', socketDir });
const entries = await host.start('3f2b8c1e-9a4d-4e6f-8b7a-1c2d3e4f5a6b', ['stripe'], {
  adminToken: 'bench-admin-token',
});
const key = entries.stripe!.env_vars.STRIPE_SECRET_KEY!;
const created = await fetch(`${entries.stripe!.base_url}/v1/customers`, {
  method: 'POST',
  headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' },
  body: 'email=bench%40example.com',
});
const customer = (await created.json()) as { id: string };
process.stdout.write(
  `${JSON.stringify({ socket: twinSocketPath(socketDir, 'stripe'), key, customer: customer.id })}\nlistening 0\n`,
);
