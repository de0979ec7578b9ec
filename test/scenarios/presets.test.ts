import t from 'tap';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { builtInCatalog } from '../../server/twins/catalog.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { GitHubSeed } from '../../server/twins/vendors/github/seed.ts';
import { tempHost } from '../twins/helpers.ts';
import { countsFor } from './sdk-counts.ts';

t.test('presets: well-formed, catalog twins only, seeds valid', async (t) => {
  t.ok(PRESETS.length >= 7);
  t.equal(new Set(PRESETS.map((p) => p.id)).size, PRESETS.length, 'ids are unique');
  for (const twin of ['github', 'stripe', 'slack']) {
    t.ok(PRESETS.filter((p) => p.twins.includes(twin)).length >= 2, `at least two presets use ${twin}`);
  }
  t.ok(
    PRESETS.some((p) => p.twins.length === 3),
    'one preset uses all three twins',
  );
  for (const p of PRESETS) {
    t.match(p.id, /^preset_[a-z0-9_]+$/);
    t.ok(p.name && p.description, `${p.id} has a name and description`);
    t.same(Object.keys(p.seed).sort(), [...p.twins].sort(), `${p.id}: one seed per twin`);
    t.same(Object.keys(p.promises).sort(), [...p.twins].sort(), `${p.id}: promises per twin`);
    for (const twin of p.twins) {
      t.ok(builtInCatalog.has(twin), `${p.id}: ${twin} is in the catalog`);
      t.doesNotThrow(() => twinFactories.get(twin)!.validateSeed(p.seed[twin]), `${p.id}: ${twin} seed`);
    }
  }
});

for (const preset of PRESETS) {
  t.test(
    `preset ${preset.id}: the promised counts are visible through the SDKs, before and after reset`,
    async (t) => {
      const { host } = await tempHost(t);
      const entries = await host.start(preset.id, preset.twins, { adminToken: 'admin', seeds: preset.seed });
      const check = async (when: string) => {
        for (const twin of preset.twins) {
          const entry = entries[twin]!;
          const diffs: string[] = [];
          const counts = await countsFor(twin, entry, preset.seed[twin], diffs);
          for (const [key, promised] of Object.entries(preset.promises[twin]!)) {
            t.equal(counts[key], promised, `${when}: ${twin} ${key}`);
          }
          if (twin === 'github') {
            const withFiles = ((preset.seed.github as GitHubSeed).repos ?? []).flatMap((r) =>
              (r.pulls ?? []).filter((p) => p.files),
            );
            t.equal(diffs.length, withFiles.length, `${when}: every pull request with files has a diff`);
          }
        }
      };
      await check('after start');
      for (const twin of preset.twins) {
        const res = await fetch(`${entries[twin]!.admin_url}/reset`, {
          method: 'POST',
          headers: { authorization: 'Bearer admin' },
        });
        t.equal(res.status, 200, `${twin} reset`);
      }
      await check('after reset');
    },
  );
}
