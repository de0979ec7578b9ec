import t from 'tap';
import { inListingOrder, PRESETS } from '../../server/scenarios/presets.ts';
import type { ScenarioPreset } from '../../server/twins/contract.ts';
import { twinDescriptors, twinPresets } from '../../server/twins/descriptors.ts';

t.test("a twin folder's presets seed that twin alone", async (t) => {
  for (const [name, descriptor] of twinDescriptors) {
    t.ok(descriptor.presets?.presets.length, `${name} ships at least one preset`);
    for (const preset of descriptor.presets?.presets ?? []) {
      t.same(preset.twins, [name], `${preset.id} starts ${name} only`);
      t.same(Object.keys(preset.seed), [name], `${preset.id} seeds ${name} only`);
    }
  }
});

t.test("every promised count is one its twin's folder documents", async (t) => {
  for (const preset of PRESETS) {
    for (const [twin, counts] of Object.entries(preset.promises)) {
      const documented = Object.keys(twinDescriptors.get(twin)?.presets?.promiseKeys ?? {});
      for (const key of Object.keys(counts)) {
        t.ok(documented.includes(key), `${preset.id}: ${twin} documents "${key}"`);
      }
    }
  }
});

t.test('the listing holds every folder preset once, beside the spanning ones', async (t) => {
  const ids = PRESETS.map((p) => p.id);
  for (const preset of twinPresets) {
    t.equal(ids.filter((id) => id === preset.id).length, 1, `${preset.id} listed once`);
  }
  t.same(
    PRESETS.filter((p) => p.twins.length === 1)
      .map((p) => p.id)
      .sort(),
    twinPresets.map((p) => p.id).sort(),
    'the single-twin presets listed are exactly those of the folders',
  );
});

t.test('listing order: named presets by their place, the others after them as they came', async (t) => {
  const preset = (id: string): ScenarioPreset => ({
    id,
    name: id,
    description: id,
    twins: [],
    seed: {},
    promises: {},
  });
  const listed = inListingOrder(
    [preset('preset_new_b'), preset('preset_second'), preset('preset_new_a'), preset('preset_first')],
    ['preset_first', 'preset_second', 'preset_gone'],
  );
  t.same(
    listed.map((p) => p.id),
    ['preset_first', 'preset_second', 'preset_new_b', 'preset_new_a'],
  );
});
