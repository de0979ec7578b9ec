import { createServer, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Stripe from 'stripe';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { schemaFailureOf } from './vendor-schema.ts';
import { vendorFetch } from './vendor-schema.ts';
import { freshConnectionFetch, precompileStripeSchemas } from './stripe-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

export async function tempDir(t: Teardown): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-twins-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** A host on a fresh temp data dir, closed when the test ends. */
export async function tempHost(t: Teardown, dataDir?: string): Promise<{ host: TwinHost; dataDir: string }> {
  const dir = dataDir ?? (await tempDir(t));
  const host = new TwinHost({ factories: twinFactories, dataDir: dir, publicHost: '127.0.0.1' });
  t.teardown(() => host.close());
  return { host, dataDir: dir };
}

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP receiver for webhook deliveries; `next()` resolves with the next request it gets. */
export async function webhookReceiver(t: Teardown, status = 200) {
  const received: Received[] = [];
  const waiters: Array<(r: Received) => void> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      res.statusCode = status;
      res.end('ok');
      const waiter = waiters.shift();
      if (waiter) waiter(r);
      else received.push(r);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    next(timeoutMs = 5000): Promise<Received> {
      const queued = received.shift();
      if (queued) return Promise.resolve(queued);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no webhook delivery received')), timeoutMs);
        waiters.push((r) => {
          clearTimeout(timer);
          resolve(r);
        });
      });
    },
  };
}

/** Lists the files of a .tar.gz (regular files only) with their contents. */
export function untarGz(data: ArrayBuffer | Buffer): Map<string, string> {
  const buf = gunzipSync(Buffer.from(data as ArrayBuffer));
  const files = new Map<string, string>();
  let offset = 0;
  let longName: string | undefined;
  while (offset + 512 <= buf.length) {
    const header = buf.subarray(offset, offset + 512);
    if (header.every((b) => b === 0)) break;
    const name = header.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    const size = parseInt(header.subarray(124, 136).toString('ascii').replace(/\0.*$/s, '').trim() || '0', 8);
    const type = String.fromCharCode(header[156] ?? 48);
    const body = buf.subarray(offset + 512, offset + 512 + size);
    if (type === 'x') longName = /path=(.*)\n/.exec(body.toString('utf8'))?.[1];
    else if (type === '0' || type === '\0') {
      files.set(longName ?? name, body.toString('utf8'));
      longName = undefined;
    }
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

/** The HTTP status an SDK call failed with (undefined when it succeeded). */
export async function statusOf(call: Promise<unknown>): Promise<number | undefined> {
  try {
    await call;
    return undefined;
  } catch (error) {
    // A response that broke the vendor's schema is a test failure, not a status to compare.
    const schemaFailure = schemaFailureOf(error);
    if (schemaFailure) throw schemaFailure;
    return (
      (error as { status?: number; statusCode?: number }).status ??
      (error as { statusCode?: number }).statusCode
    );
  }
}

/**
 * stripe-node pointed at a Stripe twin, as an app would point it with the twin's variables. No retries, so
 * an injected fault reaches the test as it is. Every response is checked against Stripe's API description
 * (vendor-schema.ts): an invalid one fails the call with a VendorSchemaError.
 */
export function stripeClient(env: Record<string, string>, key = env.STRIPE_SECRET_KEY!): Stripe {
  precompileStripeSchemas();
  return new Stripe(key, {
    host: env.STRIPE_API_HOST,
    port: Number(env.STRIPE_API_PORT),
    protocol: env.STRIPE_API_PROTOCOL as 'http',
    maxNetworkRetries: 0,
    httpClient: Stripe.createFetchHttpClient(vendorFetch('stripe', freshConnectionFetch)),
  });
}
