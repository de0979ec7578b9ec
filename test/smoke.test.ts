import t from 'tap';
import { builtInCatalog } from '../server/twins/catalog.ts';
t.test('catalog', async (t) => {
  t.same(builtInCatalog.list(), []);
});
