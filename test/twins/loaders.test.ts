import t from 'tap';
import { twinDescriptors } from '../../server/twins/descriptors.ts';
import { loadTwin, loadTwins, twinNames } from '../../server/twins/loaders.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { TwinFactory } from '../../server/twins/contract.ts';

/** The pods' lazy list (server/twins/loaders.ts) against the eager one tests and benchmarks use. */

t.test('every twin of registry.ts loads on demand, as the same factory', async (t) => {
  t.same([...twinNames], [...twinFactories.keys()], 'the same names, in the same order');
  t.same([...twinNames], [...twinDescriptors.keys()]);
  let loaded = 0;
  for (const name of twinNames) {
    t.equal(await loadTwin(name), twinFactories.get(name), `${name}: its folder's ${name}Twin`);
    loaded++;
  }
  t.equal(loaded, 14, 'all fourteen');
  t.equal(loadTwin('github'), loadTwin('github'), 'loaded once: the same promise');
});

t.test('a name no twin has loads nothing, whatever it looks like', async (t) => {
  for (const name of ['nope', '../registry', 'github/../stripe', '', 'constructor', '__proto__'])
    t.equal(loadTwin(name), undefined, JSON.stringify(name));
  const into = new Map<string, TwinFactory>();
  await loadTwins(['stripe', 'nope', 'stripe', 'slack'], into);
  t.same([...into.keys()].sort(), ['slack', 'stripe'], 'the known ones, once each');
});
