/**
 * The main process never runs a twin (they run in pods), so its import graph holds the twins' descriptors
 * only (server/twins/descriptors.ts): no driver (vendors/<name>/twin.ts), no engine, no graphql. Every
 * process that starts a Twinbox pays for what that graph holds; this keeps a driver from creeping back in.
 * The pod's graph is checked the same way as the control: it must hold every driver, so the check can fail.
 */
import { fileURLToPath } from 'node:url';
import { build, type Metafile } from 'esbuild';
import t from 'tap';
import { twinDescriptors } from '../../server/twins/descriptors.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** Every file and package an entry point's import graph reaches (packages are left out, named only). */
async function graphOf(entry: string): Promise<{ files: string[]; packages: Set<string> }> {
  const { metafile } = await build({
    entryPoints: [entry],
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    write: false,
    metafile: true,
    logLevel: 'silent',
    outfile: 'graph.mjs',
  });
  const inputs: Metafile['inputs'] = metafile.inputs;
  const packages = new Set(
    Object.values(inputs).flatMap((input) =>
      input.imports.filter((i) => i.external).map((i) => i.path.replace(/^((?:@[^/]+\/)?[^/]+).*$/, '$1')),
    ),
  );
  return { files: Object.keys(inputs), packages };
}

const DRIVER = /^server\/twins\/vendors\/([a-z]+)\/twin\.ts$/;
const driversIn = (files: string[]) => files.flatMap((f) => DRIVER.exec(f)?.[1] ?? []).sort();
const engineFilesIn = (files: string[]) => files.filter((f) => f.startsWith('server/twins/engine/'));
const HEAVY_PACKAGES = ['emulate', 'graphql'];

t.test("the main process's graph holds no twin driver, engine or graphql", async (t) => {
  const { files, packages } = await graphOf('server/twinbox.ts');
  t.ok(files.includes('server/twins/descriptors.ts'), 'the descriptors are in it');
  t.same(driversIn(files), [], 'no vendor driver (vendors/<name>/twin.ts)');
  t.same(engineFilesIn(files), [], 'nothing of server/twins/engine/');
  t.same(
    HEAVY_PACKAGES.filter((p) => packages.has(p)),
    [],
    'neither the engine package nor graphql',
  );
});

t.test("the pod's graph holds every driver, the engine and graphql (the check above can fail)", async (t) => {
  const { files, packages } = await graphOf('server/pod/main.ts');
  t.same(driversIn(files), [...twinFactories.keys()].sort(), 'every vendor driver');
  t.ok(engineFilesIn(files).length > 0, 'the engine');
  t.same(
    HEAVY_PACKAGES.filter((p) => packages.has(p)),
    HEAVY_PACKAGES,
    'the engine package and graphql',
  );
});

t.test('the descriptors and the factories list the same twins, in one order, alike', async (t) => {
  t.same([...twinDescriptors.keys()], [...twinFactories.keys()], 'the same names in the same order');
  t.equal(twinFactories.size, 14, 'all 14 twins');
  for (const [name, descriptor] of twinDescriptors) {
    const factory = twinFactories.get(name)!;
    for (const key of Object.keys(descriptor) as Array<keyof typeof descriptor>)
      t.equal(factory[key], descriptor[key], `${name}: the factory's ${key} is its descriptor's`);
  }
});
