/**
 * Debian's python3-stripe (stripe-python 5) as a client of the Stripe twin (issue 23, part 3): customers,
 * auto_paging_iter, expand, idempotency keys, a declined card caught as stripe.error.CardError, and
 * stripe.Webhook.construct_event on an event the twin delivered. stripe-python 5 sends no
 * Stripe-Version, so the account's default (the seed's `api_version`, 2022-11-15 here) answers. The app
 * reaches the twin through a proxy that checks every answer against the 2022-11-15 description.
 * Under CI a missing python3-stripe fails the test (test/helpers/ci.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import t from 'tap';
import { missingPart } from '../helpers/ci.ts';
import type { Teardown } from './helpers.ts';
import { stripeTwin } from './stripe-version-clients.ts';
import { stripeVersionFetch } from './stripe-versions.ts';
import { checked } from './vendor-schema.ts';

const PYTHON = '/usr/bin/python3';
const APP = fileURLToPath(new URL('./fixtures/stripe_python_app.py', import.meta.url));
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding'];

async function hasStripePython(): Promise<boolean> {
  if (!existsSync(PYTHON)) return false;
  try {
    await promisify(execFile)(PYTHON, ['-c', 'import stripe']);
    return true;
  } catch {
    return false;
  }
}

/** Forwards to the twin; each answer is checked in the account's version before the app sees it. */
async function checkingProxy(t: Teardown, twinBase: string) {
  const check = stripeVersionFetch('2022-11-15');
  const failures: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) {
        if (typeof v === 'string' && k !== 'host' && !HOP_BY_HOP.includes(k)) headers.set(k, v);
      }
      const method = req.method ?? 'GET';
      check(`${twinBase}${req.url ?? '/'}`, {
        method,
        headers,
        ...(method === 'GET' || method === 'HEAD' ? {} : { body: Buffer.concat(chunks) }),
      })
        .then(async (answer) => {
          const out: Record<string, string> = {};
          answer.headers.forEach((v, k) => {
            if (!HOP_BY_HOP.includes(k)) out[k] = v;
          });
          res.writeHead(answer.status, out);
          res.end(Buffer.from(await answer.arrayBuffer()));
        })
        .catch((error: unknown) => {
          failures.push(String(error));
          res.writeHead(502, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ error: { type: 'api_error', message: String(error) } }));
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, failures };
}

t.test('stripe-python 5 (python3-stripe): an app pinned to nothing, in the account version', async (t) => {
  if (!(await hasStripePython())) return missingPart(t, 'python3-stripe (Debian) for /usr/bin/python3');
  const { env } = await stripeTwin(t, {
    stripe: {
      api_version: '2022-11-15',
      products: [
        {
          id: 'prod_pro',
          name: 'Pro',
          prices: [{ id: 'price_pro', unit_amount: 2000, currency: 'usd', recurring: { interval: 'month' } }],
        },
      ],
    },
  });
  const proxy = await checkingProxy(t, env.STRIPE_API_BASE!);
  const before = checked.length;
  const { stdout } = await promisify(execFile)(PYTHON, [APP], {
    env: {
      PATH: process.env.PATH ?? '',
      STRIPE_SECRET_KEY: env.STRIPE_SECRET_KEY!,
      STRIPE_API_BASE: proxy.url,
    },
    timeout: 120_000,
  });
  const out = JSON.parse(stdout.trim().split('\n').pop()!) as Record<string, unknown>;
  t.match(out.version, /^5\./, 'stripe-python 5');
  t.equal(out.endpoint_api_version, '2022-11-15', 'the endpoint is pinned to the account version');
  t.same(
    out.paged,
    ['c3@example.com', 'c2@example.com', 'c1@example.com', 'c0@example.com', 'ada@example.com'],
    'auto_paging_iter walks every page, newest first',
  );
  t.equal(out.idempotent_same_id, true, 'the same idempotency key gives the same customer');
  t.equal(out.idempotency_error, 400, 'other parameters with it: IdempotencyError');
  t.equal(out.subscription_status, 'active');
  t.type(out.current_period_end, 'number', '2022-11-15: current_period_end on the subscription');
  t.equal(out.expanded_intent_status, 'succeeded', 'latest_invoice.payment_intent expanded');
  t.equal(out.expanded_customer_email, 'ada@example.com', 'customer expanded');
  t.same(out.card_error, { status: 402, code: 'card_declined', decline_code: 'generic_decline' });
  t.equal(out.product_active, false, 'active=False is read as false');
  t.match(out.event, {
    type: 'customer.subscription.created',
    api_version: '2022-11-15',
    current_period_end: Number,
  });
  t.equal(out.tampered, 'refused', 'a changed payload fails construct_event');
  t.same(proxy.failures, [], 'every answer matched the 2022-11-15 description');
  const mine = checked.slice(before);
  t.ok(mine.length >= 15, `${mine.length} answers checked`);
  t.ok(mine.every((c) => c.twin === 'stripe@2022-11-15' && c.valid));
});
