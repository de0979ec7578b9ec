/**
 * Workspace benchmark: what a disk-image workspace (an ext4 image, loop-mounted) costs against a tmpfs
 * (what Twinbox used before, and still uses where no loop device can be had), in one run.
 *
 * 1. Create, write a small source tree, remove: WORKSPACES of each kind one after the other, then
 *    WORKSPACES of each kind at once; rounds alternate the kinds, so drift in load hits both alike.
 * 2. POST→ready and DELETE of warm deploys (full isolation) with each kind: deploys.ts in a child, the
 *    tmpfs side in a private mount namespace where `losetup` is hidden (bound over by /dev/null), which
 *    is Twinbox's own fallback path. Rounds alternate the kinds here too.
 *   node --import tsx bench/workspaces/run.ts     WORKSPACES=20 ROUNDS=3 DEPLOYS=5 by default; as root
 */
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { createWorkspace, removeWorkspace, type Workspace } from '../../server/deploy/steps/workspace.ts';
import { ms, pct, ratio } from '../kit.ts';

const N = Number(process.env.WORKSPACES ?? 20);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const DEPLOYS = Number(process.env.DEPLOYS ?? 5);
const BYTES = 2048 * 1024 * 1024; // TWINBOX_SANDBOX_DISK_MB's default
type Kind = 'disk' | 'tmpfs';
const KINDS: Kind[] = ['disk', 'tmpfs'];

if (process.getuid?.() !== 0) {
  console.error('the workspace benchmark mounts file systems: run it as root');
  process.exit(2);
}

/** What a source extract writes: 200 small files in 20 folders and one 4 MiB file. */
async function writeSource(dir: string): Promise<void> {
  const small = Buffer.alloc(4096, 'x');
  for (let d = 0; d < 20; d++) {
    await mkdir(join(dir, `src-${d}`));
    for (let f = 0; f < 10; f++) await writeFile(join(dir, `src-${d}`, `file-${f}.js`), small);
  }
  await writeFile(join(dir, 'bundle.js'), Buffer.alloc(4 * 1024 * 1024, 'y'));
}

function expectKind(made: Workspace, kind: Kind): void {
  if (made.kind !== kind) throw new Error(`asked for ${kind}, got ${made.kind}: ${made.reason}`);
}

interface Times {
  create: number[];
  write: number[];
  remove: number[];
  burstCreate: number[];
  burstRemove: number[];
}
const times: Record<Kind, Times> = {
  disk: { create: [], write: [], remove: [], burstCreate: [], burstRemove: [] },
  tmpfs: { create: [], write: [], remove: [], burstCreate: [], burstRemove: [] },
};

async function round(parent: string, kind: Kind): Promise<void> {
  const t = times[kind];
  for (let i = 0; i < N; i++) {
    const dir = join(parent, `${kind}-${i}`);
    let start = performance.now();
    expectKind(await createWorkspace(dir, BYTES, { kind }), kind);
    t.create.push(performance.now() - start);
    start = performance.now();
    await writeSource(dir);
    t.write.push(performance.now() - start);
    start = performance.now();
    await removeWorkspace(dir);
    t.remove.push(performance.now() - start);
  }
  const dirs = Array.from({ length: N }, (_, i) => join(parent, `${kind}-burst-${i}`));
  let start = performance.now();
  for (const made of await Promise.all(dirs.map((dir) => createWorkspace(dir, BYTES, { kind }))))
    expectKind(made, kind);
  t.burstCreate.push(performance.now() - start);
  start = performance.now();
  await Promise.all(dirs.map((dir) => removeWorkspace(dir)));
  t.burstRemove.push(performance.now() - start);
}

interface DeployRun {
  ready: number[];
  deletes: number[];
  kinds: string[];
  failures: string[];
}

function deploys(kind: Kind): DeployRun {
  const child = [process.execPath, '--import', 'tsx', 'bench/workspaces/deploys.ts'];
  const command =
    kind === 'disk'
      ? child
      : [
          'unshare',
          '--mount',
          '--propagation',
          'private',
          'sh',
          '-c',
          'mount --bind /dev/null "$(command -v losetup)" && exec "$@"',
          'sh',
          ...child,
        ];
  const result = spawnSync(command[0]!, command.slice(1), {
    env: { ...process.env, DEPLOYS: String(DEPLOYS) },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = result.stdout.trim().split('\n').pop() ?? '';
  if (result.status !== 0 || !line.startsWith('{'))
    throw new Error(`the ${kind} deploys failed (exit ${result.status}): ${result.stdout}`);
  return JSON.parse(line) as DeployRun;
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
console.log(
  `# Workspace benchmark: ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}, load average ${load()}`,
);
const parent = await mkdtemp(join(tmpdir(), 'twinbox-bench-ws-'));
try {
  for (let r = 0; r < ROUNDS; r++)
    for (const kind of r % 2 ? [...KINDS].reverse() : KINDS) await round(parent, kind);
} finally {
  await rm(parent, { recursive: true, force: true });
  await rm(`${parent}.images`, { recursive: true, force: true });
}
const row = (label: string, pick: (t: Times) => number[], p: number) => {
  const [disk, tmpfs] = KINDS.map((kind) => pct(pick(times[kind]), p));
  console.log(`| ${label} | ${ms(tmpfs!)} | ${ms(disk!)} | ${ratio(disk!, tmpfs!)} |`);
};
console.log(`\n## ${N} workspaces of ${BYTES / 2 ** 20} MiB, ${ROUNDS} rounds (load average ${load()})`);
console.log('| per workspace | tmpfs | disk image | disk / tmpfs |');
console.log('|---|---:|---:|---:|');
row('create p50', (t) => t.create, 50);
row('create p95', (t) => t.create, 95);
row('write a source tree (204 files, 4.8 MiB) p50', (t) => t.write, 50);
row('remove p50', (t) => t.remove, 50);
row('remove p95', (t) => t.remove, 95);
row(`${N} created at once, all done (median of rounds)`, (t) => t.burstCreate, 50);
row(`${N} removed at once, all done (median of rounds)`, (t) => t.burstRemove, 50);

const deployed: Record<Kind, DeployRun[]> = { disk: [], tmpfs: [] };
for (let r = 0; r < ROUNDS; r++)
  for (const kind of r % 2 ? [...KINDS].reverse() : KINDS) deployed[kind].push(deploys(kind));
console.log(`\n## ${ROUNDS} × ${DEPLOYS} warm deploys per kind, full isolation (load average ${load()})`);
for (const kind of KINDS) {
  const failures = deployed[kind].flatMap((d) => d.failures);
  const mounted = [...new Set(deployed[kind].flatMap((d) => d.kinds))];
  console.log(
    `  ${kind}: workspace file system ${mounted.join(', ')}; ${failures.length} failed${failures.length ? `: ${failures.join('; ')}` : ''}`,
  );
}
console.log('| per deploy | tmpfs | disk image | disk / tmpfs |');
console.log('|---|---:|---:|---:|');
for (const [label, pick, p] of [
  ['POST→ready p50', (d: DeployRun) => d.ready, 50],
  ['POST→ready p95', (d: DeployRun) => d.ready, 95],
  ['DELETE p50', (d: DeployRun) => d.deletes, 50],
] as const) {
  const [disk, tmpfs] = KINDS.map((kind) => pct(deployed[kind].flatMap(pick), p));
  console.log(`| ${label} | ${ms(tmpfs!)} | ${ms(disk!)} | ${ratio(disk!, tmpfs!)} |`);
}
