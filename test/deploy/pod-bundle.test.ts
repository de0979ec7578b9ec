import t, { type Test } from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { pino } from 'pino';
import { bundlePod, PodBundleError } from '../../server/deploy/pods/pod-bundle.ts';
import { PodManager } from '../../server/deploy/pods/pods.ts';
import { REPO_ROOT } from '../helpers/process.ts';

/**
 * The pod's bundle (server/deploy/pods/pod-bundle.ts): made once per Twinbox with esbuild into its data
 * directory (or a root several Twinboxes share), reused while its inputs are unchanged, plain JavaScript that runs without tsx, and a failure
 * to make it is a PodBundleError, never a fallback.
 */

async function scratch(t: Test, prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  return dir;
}

t.test(
  "the pod's bundle runs as plain JavaScript and is reused while its inputs are unchanged",
  async (t) => {
    const dataDir = await scratch(t, 'twinbox-bundle-');
    const first = await bundlePod(join(dataDir, 'pod-bundle'));
    t.ok(first.built, 'built on the first start');
    t.ok(existsSync(first.entry), 'the bundle is in the data directory');
    t.equal(first.dir, join(dataDir, 'pod-bundle', first.key));
    t.equal(
      readlinkSync(join(first.dir, 'node_modules')),
      realpathSync(join(REPO_ROOT, 'node_modules')),
      "packages left out of it resolve from the checkout's node_modules",
    );
    // No loader: Node runs the bundle as it is, up to the pod's own check of its environment.
    const run = spawnSync(process.execPath, [first.entry], {
      env: { PATH: process.env.PATH },
      encoding: 'utf8',
    });
    t.equal(run.status, 2, 'the pod ran and refused to start without its directories');
    t.match(run.stderr, /TWINBOX_POD_DIR and TWINBOX_POD_STATE_DIR are required/);

    const again = await bundlePod(join(dataDir, 'pod-bundle'));
    t.notOk(again.built, 'the next start reuses it');
    t.same({ key: again.key, entry: again.entry }, { key: first.key, entry: first.entry });
  },
);

t.test('each twin is a chunk of its own, which the pod loads only when a sandbox names it', async (t) => {
  const dataDir = await scratch(t, 'twinbox-bundle-chunks-');
  const program = await bundlePod(join(dataDir, 'pod-bundle'));
  const chunks = await readdir(join(program.dir, 'chunks'));
  t.equal(chunks.filter((name) => name.startsWith('twin-')).length, 14, 'one chunk per twin');
  const main = await readFile(program.entry, 'utf8');
  // Strings only a twin's own folder has: the GitHub twin's GraphQL, Stripe's API versions, Slack's methods.
  for (const [twin, text] of <[string, string][]>[
    ['github', 'GraphQLSchema'],
    ['stripe', 'stripeTwin'],
    ['slack', 'conversations.history'],
  ]) {
    t.notOk(main.includes(text), `the pod's entry has no ${twin} code`);
    const holders = [];
    for (const chunk of chunks)
      if ((await readFile(join(program.dir, 'chunks', chunk), 'utf8')).includes(text)) holders.push(chunk);
    t.ok(holders.length > 0, `a chunk has it: ${holders.join(', ')}`);
  }
});

t.test('a changed input makes a new bundle; the old one goes', async (t) => {
  const dir = await scratch(t, 'twinbox-bundle-src-');
  const dataDir = join(dir, 'data');
  const entry = join(dir, 'entry.ts');
  await writeFile(join(dir, 'data.txt'), 'beside the source\n');
  // A module that finds a file beside itself: in the bundle its import.meta.url stays the source's. The
  // same words inside a string stay words (pod-bundle.ts's own banner is such a string).
  await writeFile(
    entry,
    "import { readFileSync } from 'node:fs';\nconst n: number = 1;\nconsole.log(n, import.meta.url, readFileSync(new URL('./data.txt', import.meta.url), 'utf8').trim(), 'import.meta.url');\n",
  );
  const first = await bundlePod(join(dataDir, 'pod-bundle'), { entry });
  const ran = spawnSync(process.execPath, [first.entry], { encoding: 'utf8' });
  t.equal(ran.status, 0, ran.stderr);
  t.equal(ran.stdout.trim(), `1 ${pathToFileURL(entry).href} beside the source import.meta.url`);

  await writeFile(entry, 'const n: number = 2;\nconsole.log(n);\n');
  const second = await bundlePod(join(dataDir, 'pod-bundle'), { entry });
  t.ok(second.built, 'rebuilt');
  t.not(second.key, first.key, 'under a new key');
  t.equal(spawnSync(process.execPath, [second.entry], { encoding: 'utf8' }).stdout.trim(), '2');
  t.same(
    (await readdir(join(dataDir, 'pod-bundle'))).sort(),
    [second.key, 'manifest.json'].sort(),
    'the old bundle is removed',
  );
});

t.test(
  "a root shared by several Twinboxes (TWINBOX_POD_BUNDLE_DIR): one build, and others' bundles stay while in use",
  async (t) => {
    const dir = await scratch(t, 'twinbox-bundle-shared-');
    const root = join(dir, 'shared');
    const entry = join(dir, 'entry.ts');
    await writeFile(entry, 'const n: number = 3;\nconsole.log(n);\n');
    // Bundles of other sources that other Twinboxes made: one started from just now, one unused for 2 hours.
    await mkdir(join(root, 'inuse0000000000'), { recursive: true });
    await mkdir(join(root, 'stale0000000000'), { recursive: true });
    const twoHoursAgo = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(root, 'stale0000000000'), twoHoursAgo, twoHoursAgo);

    // Two Twinboxes starting at once over the same sources.
    const [a, b] = await Promise.all([
      bundlePod(root, { entry, shared: true }),
      bundlePod(root, { entry, shared: true }),
    ]);
    t.equal(a.key, b.key, 'the same key');
    t.equal(a.entry, b.entry, 'the same bundle');
    t.equal(spawnSync(process.execPath, [a.entry], { encoding: 'utf8' }).stdout.trim(), '3', 'and it runs');
    const later = await bundlePod(root, { entry, shared: true });
    t.notOk(later.built, 'a later start reuses it');
    t.same(
      (await readdir(root)).sort(),
      [a.key, 'inuse0000000000', 'manifest.json'].sort(),
      'no staging left; the bundle in use stays, the one unused for two hours goes',
    );
  },
);

t.test('a pod that cannot be bundled: a PodBundleError, and no pod starts', async (t) => {
  const dir = await scratch(t, 'twinbox-bundle-bad-');
  const entry = join(dir, 'entry.ts');
  await writeFile(entry, "import { nothing } from './missing.ts';\nconsole.log(nothing);\n");
  const error = await bundlePod(join(dir, 'data', 'pod-bundle'), { entry }).catch((e: unknown) => e);
  t.ok(error instanceof PodBundleError, 'typed');
  t.match(
    (error as Error).message,
    /could not bundle its sandbox pod .*entry\.ts:1: Could not resolve "\.\/missing\.ts"/,
  );

  const pods = new PodManager({
    dataDir: join(dir, 'data'),
    // Never reached: a pod start waits for the bundle first.
    isolation: { name: 'process-group' } as never,
    installEgress: [],
    memoryBytes: 256 * 1024 * 1024,
    twinBodyBytes: 1024 * 1024,
    logger: pino({ level: 'silent' }),
    program: bundlePod(join(dir, 'data', 'pod-bundle'), { entry }),
  });
  t.teardown(() => pods.close());
  const refused = await pods.acquire('sb-1', ['github']).catch((e: unknown) => e);
  t.ok(refused instanceof PodBundleError, 'the deploy gets the same typed error');
  t.notOk(existsSync(join(dir, 'data', 'pods')), 'and no pod was started');
});
