import t from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import {
  createWorkspace,
  isMountPoint,
  removeWorkspace,
  removeWorkspaceFolder,
  sweepWorkspaces,
  workspaceImageOf,
  workspaceIn,
} from '../../server/deploy/steps/workspace.ts';
import { missingPart } from '../helpers/ci.ts';
import { loopsOf } from '../helpers/leftovers.ts';
import { call, createUser, tempDir } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from './isolation-fixtures.ts';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

// Writes real zero-filled 1 MiB chunks (not a sparse seek: ext4 would allocate nothing) until 3 GiB or
// the first error, so only about the 1 GiB cap is ever written. `boot` tells this process from a restart.
const filler = `
const fs = require('node:fs');
const boot = require('node:crypto').randomUUID();
function fill() {
  const chunk = Buffer.alloc(1024 * 1024);
  const fd = fs.openSync('fill.bin', 'w');
  let written = 0;
  let code = 'none';
  try {
    while (written < 3 * 1024 * 1024 * 1024) written += fs.writeSync(fd, chunk);
  } catch (e) {
    code = e.code || String(e);
  } finally {
    fs.closeSync(fd);
  }
  return { code, written };
}
require('node:http')
  .createServer((q, s) => s.end(JSON.stringify({ boot, ...(q.url === '/fill' ? fill() : {}) })))
  .listen(Number(process.env.PORT));
`;

/** The memory cgroup directory a host process is in (v1 memory controller, else the v2 hierarchy). */
function memoryCgroupOf(pid: number): { dir: string; version: 'v1' | 'v2' } {
  const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').split('\n');
  const v1 = lines
    .map((l) => /^\d+:([^:]*):(.*)$/.exec(l))
    .find((m) => m?.[1]!.split(',').includes('memory'));
  if (v1) return { dir: join(mountOf('cgroup', 'memory'), v1[2]!), version: 'v1' };
  const v2 = lines.find((l) => l.startsWith('0::'));
  if (!v2) throw new Error(`no memory cgroup for pid ${pid}`);
  return { dir: join(mountOf('cgroup2'), v2.slice(3)), version: 'v2' };
}

function mountOf(type: string, option?: string): string {
  const found = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .find(([, , fs, opts]) => fs === type && (!option || opts!.split(',').includes(option)));
  if (!found) throw new Error(`no ${type} mount${option ? ` with ${option}` : ''}`);
  return found[1]!;
}

function keyed(file: string, key: string): number | undefined {
  const line = readFileSync(file, 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${key} `));
  return line ? Number(line.split(' ')[1]) : undefined;
}

/** Anonymous memory of the cgroup and its children: what the app holds, page cache left out. */
function anonBytes(cg: { dir: string; version: 'v1' | 'v2' }): number {
  const stat = join(cg.dir, 'memory.stat');
  const value = cg.version === 'v1' ? (keyed(stat, 'total_rss') ?? keyed(stat, 'rss')) : keyed(stat, 'anon');
  if (value === undefined) throw new Error(`no anonymous memory figure in ${stat}`);
  return value;
}

function oomKills(cg: { dir: string; version: 'v1' | 'v2' }): number {
  const file = join(cg.dir, cg.version === 'v1' ? 'memory.oom_control' : 'memory.events');
  return keyed(file, 'oom_kill') ?? 0;
}

t.test(
  'a 1 GiB workspace: writing 3 GiB gets ENOSPC, the app still answers, its memory unchanged',
  async (t) => {
    if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
    const { losetup } = trustedExecutables();
    if (!losetup || !trustedExecutables()['mkfs.ext4'] || !existsSync('/dev/loop-control'))
      return missingPart(t, 'no loop devices or e2fsprogs (losetup, mkfs.ext4, /dev/loop-control)');
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'filler',
      files: { 'package.json': JSON.stringify({ name: 'filler', main: 'filler.js' }), 'filler.js': filler },
    });
    // 256 MiB of memory for a 1 GiB disk: a workspace held in memory (a tmpfs) would get the app killed.
    const tb = await deployingTwinbox(t, gh, {
      TWINBOX_SANDBOX_DISK_MB: '1024',
      TWINBOX_APP_MEMORY_MB: '256',
    });
    const user = await createUser(tb);
    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/filler', branch: 'main' });
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    const deployer = tb.engine!.deployer;
    const workspace = deployer.workspaceOf(sandbox.sandbox_id);
    const image = workspaceImageOf(workspace);

    // The workspace is the ext4 image, loop-mounted, under the test's data dir.
    t.ok(isMountPoint(workspace), 'the workspace is mounted');
    const mount = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .find((line) => line.split(' ')[4] === workspace);
    t.match(mount, / - ext4 \/dev\/loop\d+ /, 'an ext4 file system on a loop device');
    t.ok(image.startsWith(tb.dataDir), `the image ${image} is in the data dir`);
    t.equal(statSync(image).size, GiB, 'the image is TWINBOX_SANDBOX_DISK_MB');

    const pid = deployer.appPid(sandbox.sandbox_id)!;
    t.ok(pid > 0 && groupAlive(pid), 'the app runs');
    const cgroup = memoryCgroupOf(pid);
    const first = (await (await fetch(sandbox.app_url)).json()) as { boot: string };
    const anonBefore = anonBytes(cgroup);
    const oomBefore = oomKills(cgroup);

    const fill = (await (await fetch(`${sandbox.app_url}/fill`)).json()) as {
      boot: string;
      code: string;
      written: number;
    };
    t.comment(`wrote ${(fill.written / MiB).toFixed(0)} MiB, then ${fill.code}`);
    t.equal(fill.code, 'ENOSPC', 'the write past the cap fails with ENOSPC');
    t.ok(fill.written > 512 * MiB, `most of the disk was written first (${fill.written} bytes)`);
    t.ok(fill.written <= GiB, 'no more than the cap');
    t.ok(statSync(image).blocks * 512 <= GiB + 64 * MiB, 'the image holds no more than the cap on disk');

    const after = (await (await fetch(sandbox.app_url)).json()) as { boot: string };
    t.equal(fill.boot, first.boot, 'the app that filled the disk answered');
    t.equal(after.boot, first.boot, 'and answers again, the same process');
    t.equal(deployer.appPid(sandbox.sandbox_id), pid, 'Twinbox did not restart it');
    t.ok(groupAlive(pid), 'its process is alive');
    const anonAfter = anonBytes(cgroup);
    t.comment(
      `anonymous memory ${(anonBefore / MiB).toFixed(1)} MiB before, ${(anonAfter / MiB).toFixed(1)} after`,
    );
    t.ok(anonAfter < anonBefore + 64 * MiB, 'the sandbox holds no more memory than before (within 64 MiB)');
    t.equal(oomKills(cgroup), oomBefore, 'no process of the sandbox was killed for memory');

    // Deleted: unmounted, its image and loop device gone.
    const deleted = await call(tb, {
      method: 'DELETE',
      url: `/sandboxes/${sandbox.sandbox_id}`,
      token: user.key,
    });
    t.equal(deleted.body.status, 'deleted');
    // The folder goes last (removeWorkspaceFolder): waiting for the workspace alone raced its removal.
    await until(
      () => !existsSync(workspace) && !existsSync(image) && !existsSync(dirname(workspace)),
      "the workspace, its image and the sandbox's workspace folder removed",
      60_000,
    );
    t.notOk(isMountPoint(workspace), 'unmounted');
    t.notOk(existsSync(dirname(workspace)), "the sandbox's workspace folder is gone too");
    t.notOk(existsSync(dirname(image)), 'and its images folder');
    t.same(loopsOf(image), [], 'no loop device left on the image');
  },
);

t.test('workspaces of every kind are removed and swept, with their images and loop devices', async (t) => {
  if (!requireHost(t, { root: true })) return;
  const { losetup, mount } = trustedExecutables();
  if (!losetup || !mount || !trustedExecutables()['mkfs.ext4'] || !existsSync('/dev/loop-control'))
    return missingPart(t, 'no loop devices or e2fsprogs (losetup, mkfs.ext4, /dev/loop-control)');
  const parent = join(await tempDir(t), 'workspaces');
  const ws = (name: string) => join(parent, name);

  const made = await createWorkspace(ws('a'), 16 * MiB);
  t.same([made.kind, made.enforced, made.reason], ['disk', true, undefined], 'a disk image');
  t.equal(statSync(ws('a')).mode & 0o777, 0o700, 'mode 0700');
  t.same(readdirSync(ws('a')), [], 'empty (no lost+found)');
  t.match(mountOptionsOf(ws('a')), /\bnosuid\b.*\bnodev\b|\bnodev\b.*\bnosuid\b/, 'nosuid,nodev');

  // What an older Twinbox left: a tmpfs workspace, and a crash between attaching and mounting an image.
  await mkdir(ws('old-tmpfs'), { recursive: true });
  await run(mount, ['-t', 'tmpfs', '-o', 'size=1m', 'twinbox-workspace', ws('old-tmpfs')]);
  await mkdir(ws('half'), { recursive: true });
  await mkdir(dirname(workspaceImageOf(ws('half'))), { recursive: true });
  await writeFile(workspaceImageOf(ws('half')), Buffer.alloc(MiB));
  await run(losetup, ['--find', workspaceImageOf(ws('half'))]);
  t.equal(loopsOf(workspaceImageOf(ws('half'))).length, 1, 'a loop device is attached to the half-made one');
  // An image whose workspace directory is gone.
  await writeFile(workspaceImageOf(ws('lost')), '');
  await createWorkspace(ws('kept'), 16 * MiB);
  // Sandboxes' workspaces now, in folders of their own (workspaceIn): one left, one kept; and an images
  // folder whose workspace folder is gone.
  await createWorkspace(workspaceIn(ws('new')), 16 * MiB);
  await createWorkspace(workspaceIn(ws('kept-new')), 16 * MiB);
  await mkdir(`${ws('gone')}.images`);
  await writeFile(join(`${ws('gone')}.images`, 'files.img'), '');

  t.same((await sweepWorkspaces(parent, new Set(['kept', 'kept-new']))).sort(), [
    'a',
    'gone',
    'half',
    'lost',
    'new',
    'old-tmpfs',
  ]);
  t.same(
    readdirSync(parent).sort(),
    ['kept', 'kept-new', 'kept-new.images'],
    'the kept workspaces alone are left',
  );
  t.same(readdirSync(dirname(workspaceImageOf(ws('kept')))), ['kept.img'], 'with their images');
  t.ok(isMountPoint(workspaceIn(ws('kept-new'))), 'still mounted');
  for (const name of ['a', 'half', 'old-tmpfs']) t.notOk(isMountPoint(ws(name)), `${name} unmounted`);
  t.notOk(isMountPoint(workspaceIn(ws('new'))), 'new unmounted');
  t.same(loopsOf(workspaceImageOf(ws('half'))), [], 'the half-made one is detached');
  t.same(loopsOf(workspaceImageOf(ws('a'))), [], 'the mounted one is detached at its unmount');
  t.same(loopsOf(workspaceImageOf(workspaceIn(ws('new')))), [], 'so is the one in a folder');

  await removeWorkspace(ws('kept'));
  t.notOk(existsSync(ws('kept')));
  t.notOk(existsSync(dirname(workspaceImageOf(ws('kept')))), 'the images folder goes once empty');
  await removeWorkspaceFolder(ws('kept-new'));
  t.same(readdirSync(parent), [], 'a workspace folder goes with its images folder');
});

t.test('a free loop device without a /dev node gets one', async (t) => {
  if (!requireHost(t, { root: true })) return;
  const { losetup } = trustedExecutables();
  if (!losetup || !trustedExecutables()['mkfs.ext4'] || !existsSync('/dev/loop-control'))
    return missingPart(t, 'no loop devices or e2fsprogs (losetup, mkfs.ext4, /dev/loop-control)');
  // A container's /dev holds a fixed set of nodes: take away the node of the next free device. Test files
  // beside this one attach loop devices too, and one may take that device between the two steps (losetup
  // then attaches the workspace elsewhere, and nothing needs the node): then again, a few times.
  const root = await tempDir(t);
  let free = '';
  let used: string | undefined;
  let made: Awaited<ReturnType<typeof createWorkspace>> | undefined;
  for (let attempt = 0; attempt < 5 && used !== free; attempt++) {
    free = (await run(losetup, ['-f'])).stdout.trim();
    t.match(free, /^\/dev\/loop\d+$/);
    await rm(free, { force: true });
    const dir = join(root, `ws-${attempt}`);
    made = await createWorkspace(dir, 16 * MiB);
    t.teardown(() => removeWorkspace(dir));
    used = mountSourceOf(dir);
  }
  t.equal(made?.kind, 'disk', made?.reason ?? 'a disk image');
  t.equal(used, free, 'the workspace is on the device whose node was taken away');
  t.ok(statSync(free).isBlockDevice(), `${free} was made`);
});

/** The device a mount point is mounted from (mountinfo's source, after the ` - ` separator). */
function mountSourceOf(dir: string): string | undefined {
  const line = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => l.split(' ')[4] === dir);
  return line?.split(' - ')[1]?.split(' ')[1];
}

function mountOptionsOf(dir: string): string {
  const line = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => l.split(' ')[4] === dir);
  return line?.split(' ')[5] ?? '';
}
