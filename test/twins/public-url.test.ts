import t from 'tap';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import type { TwinFactory } from '../../server/twins/contract.ts';
import { stripeTwin } from '../../server/twins/vendors/stripe/twin.ts';
import { tempDir } from './helpers.ts';

/** The Stripe twin, noting the URLs each start is given. */
function recording(seen: Array<{ baseUrl: string; publicUrl?: string }>): TwinFactory {
  return {
    ...stripeTwin,
    create(opts) {
      seen.push({ baseUrl: opts.baseUrl, publicUrl: opts.publicUrl });
      return stripeTwin.create(opts);
    },
  };
}

t.test('a twin learns where browsers reach it, and keeps it across a restart', async (t) => {
  const dataDir = await tempDir(t);
  const seen: Array<{ baseUrl: string; publicUrl?: string }> = [];
  const factories = new Map([['stripe', recording(seen)]]);
  const publicUrl = 'http://0d8f8a3e-0000-4000-8000-000000000001--stripe.localhost:3000';

  const first = new TwinHost({ dataDir, publicHost: '127.0.0.1', factories });
  const entries = await first.start('sb', ['stripe'], {
    adminToken: 'admin',
    publicUrls: { stripe: publicUrl },
  });
  t.same(seen, [{ baseUrl: entries.stripe!.base_url, publicUrl }]);
  t.match(entries.stripe!.base_url, /^http:\/\/127\.0\.0\.1:\d+$/, 'the app still gets the inside URL');
  await first.close();

  const second = new TwinHost({ dataDir, publicHost: '127.0.0.1', factories });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  t.equal(seen.length, 2);
  t.equal(seen[1]!.publicUrl, publicUrl, 'restored with the same public URL');

  const plain = new TwinHost({ dataDir: await tempDir(t), publicHost: '127.0.0.1', factories });
  t.teardown(() => plain.close());
  const own = await plain.start('other', ['stripe'], { adminToken: 'admin' });
  t.equal(seen[2]!.publicUrl, own.stripe!.base_url, 'outside a sandbox: its own base URL');
});
