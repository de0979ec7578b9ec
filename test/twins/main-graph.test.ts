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

interface Graph {
  files: string[];
  packages: Set<string>;
  /** The packages reached by static imports alone: what loads at the entry's start. */
  staticPackages: Set<string>;
}

const packageOf = (path: string) => path.replace(/^((?:@[^/]+\/)?[^/]+).*$/, '$1');
const STATIC_KINDS = new Set(['import-statement', 'require-call']);

/** Every file and package an entry point's import graph reaches (packages are left out, named only). */
async function graphOf(entry: string): Promise<Graph> {
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
      input.imports.filter((i) => i.external).map((i) => packageOf(i.path)),
    ),
  );
  const staticPackages = new Set<string>();
  const seen = new Set<string>();
  const pending = [entry];
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue;
    seen.add(file);
    for (const i of inputs[file]?.imports ?? []) {
      if (!STATIC_KINDS.has(i.kind)) continue;
      if (i.external) staticPackages.add(packageOf(i.path));
      else pending.push(i.path);
    }
  }
  return { files: Object.keys(inputs), packages, staticPackages };
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

/** Packages that only some configurations use (server/load-part.ts): PostgreSQL, the GitHub App, SMTP, /openapi.json. */
const LOADED_WHEN_USED = ['pg', 'pg-boss', 'node-pg-migrate', 'probot', 'nodemailer', 'joi-to-json'];

t.test('a start loads the optional parts only when configured', async (t) => {
  const { packages, staticPackages } = await graphOf('server/main.ts');
  t.same(
    LOADED_WHEN_USED.filter((p) => packages.has(p)),
    LOADED_WHEN_USED,
    'each is reachable (through import()), so a configuration that uses it can load it',
  );
  t.same(
    LOADED_WHEN_USED.filter((p) => staticPackages.has(p)),
    [],
    'none is imported statically',
  );
  t.ok(staticPackages.has('@hapi/hapi'), 'the static walk reaches what every start loads');
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
