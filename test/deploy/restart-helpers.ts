import type { Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { until } from '../helpers/deploy.ts';
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

/** A Stripe customer made through the sandbox's twin, as the app's own code would (Bearer secret key). */
export async function createCustomer(sandbox: any): Promise<string> {
  const res = await fetch(`${sandbox.twins.stripe.base_url}/v1/customers`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${sandbox.twins.stripe.env_vars.STRIPE_SECRET_KEY}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: `email=${encodeURIComponent(EMAIL)}`,
  });
  if (res.status !== 200) throw new Error(`customer not made: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

/** The twin saves its state a moment after a change: wait until the customer is on disk. */
export async function customerSaved(dataDir: string, sandboxId: string): Promise<void> {
  const file = () => {
    const pods = join(dataDir, 'pods');
    for (const slot of existsSync(pods) ? readdirSync(pods) : []) {
      const path = join(pods, slot, 'state', encodeURIComponent(sandboxId), 'stripe.json');
      if (existsSync(path)) return path;
    }
    return undefined;
  };
  await until(() => {
    const path = file();
    return path !== undefined && readFileSync(path, 'utf8').includes(EMAIL);
  }, "the Stripe twin's state saved");
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
