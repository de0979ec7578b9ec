import type { Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import '../helpers/sandbox-hosts.ts';

/**
 * Shared by restart.test.ts and restart-kill.test.ts (issue 14, part 2): after Twinbox stops or is killed
 * and starts again on the same data dir, a `ready` sandbox is `ready` with the same URLs, variables and
 * twin admin token, the twins' state as it was (a customer made before the restart is still there) and
 * the app answering again.
 */

export const EMAIL = 'restart@example.com';

/** A data dir of its own; whatever a killed Twinbox left mounted in it is unmounted before it goes. */
export async function dataDirFor(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-restart-'));
  t.teardown(async () => {
    for (const mount of mountsUnder(dir).reverse())
      try {
        execFileSync('umount', ['-l', mount]);
      } catch {
        // already gone
      }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  return dir;
}

export function mountsUnder(dir: string): string[] {
  return readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((point) => point.startsWith(`${dir}/`));
}

/** stripe-node as the app would build it, pointed at the sandbox's Stripe twin (its public URL). */
export function stripeOf(sandbox: any): Stripe {
  const url = new URL(sandbox.twins.stripe.base_url as string);
  return new Stripe(sandbox.twins.stripe.env_vars.STRIPE_SECRET_KEY as string, {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

/**
 * A Stripe customer made through the sandbox's twin with stripe-node. Once it is answered it is on disk
 * (the twin's journal, docs/twins.md): a kill -9 of any process right after must not lose it.
 */
export async function createCustomer(sandbox: any, email = EMAIL): Promise<string> {
  return (await stripeOf(sandbox).customers.create({ email })).id;
}

/** What must hold of a sandbox after the restart, against what it was before. */
export async function checkResumed(t: Test, before: any, after: any, logs: string): Promise<void> {
  t.equal(after.status, 'ready', after.error ?? '');
  t.equal(after.app_url, before.app_url, 'same app URL');
  t.same(after.twins, before.twins, 'same twin URLs and variables');
  t.same(after.env_vars, before.env_vars, 'same variables');
  t.equal(after.twin_admin_token, before.twin_admin_token, 'same twin admin token');
  t.match(logs, /resumed after a Twinbox restart/, "the sandbox's log says it was resumed");

  const page = await fetch(`${after.app_url}/data.json`);
  t.equal(page.status, 200, 'the app answers at the same URL');
  const data = (await page.json()) as { stripe: { customers?: string[] } };
  t.ok(data.stripe.customers?.includes(EMAIL), 'the app reads the customer made before the restart');

  const state = await fetch(`${after.twins.stripe.admin_url}/state`, {
    headers: { authorization: `Bearer ${before.twin_admin_token}` },
  });
  t.equal(state.status, 200, "the twin's admin API takes the same token");
  t.match(await state.text(), EMAIL, 'and its state holds the customer: restored, not reseeded');
}
