import t from 'tap';
import { loadPart, PartLoadError } from '../server/load-part.ts';

t.test('a part that loads is its module', async (t) => {
  const { PartLoadError: loaded } = await loadPart(
    'the load-part module',
    () => import('../server/load-part.ts'),
  );
  t.equal(loaded, PartLoadError, 'the module itself, typed');
});

t.test('a part that cannot load fails the start with PartLoadError, naming the part', async (t) => {
  // A module path built at run time, so no bundler or type check goes looking for it.
  const missing = new URL(`./no-such-part-${process.pid}.ts`, import.meta.url).href;
  const error = await loadPart('the missing part', () => import(missing)).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(error, PartLoadError);
  const failure = error as PartLoadError;
  t.equal(failure.part, 'the missing part');
  t.match(failure.message, /^Could not load the missing part: /, 'the message names the part');
  t.type(failure.cause, Error, "the import's own error is its cause");
});
