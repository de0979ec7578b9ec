import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import {
  createWorkspace,
  isMountPoint,
  removeWorkspaceFolder,
  SpareImages,
  workspaceImageOf,
  workspaceIn,
} from '../../server/deploy/steps/workspace.ts';
import { missingPart } from '../helpers/ci.ts';
import { loopsOf } from '../helpers/leftovers.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

const MiB = 1024 * 1024;

t.test('a spare image becomes a workspace: taken once, empty, capped, cleaned up like any', async (t) => {
  if (!requireHost(t, { root: true })) return;
  const { losetup, mount } = trustedExecutables();
  if (!losetup || !mount || !trustedExecutables()['mkfs.ext4'] || !existsSync('/dev/loop-control'))
    return missingPart(t, 'no loop devices or e2fsprogs (losetup, mkfs.ext4, /dev/loop-control)');
  const data = await tempDir(t);
  const spareDir = join(data, 'workspaces.spare');
  const folder = (name: string) => join(data, 'workspaces', name);
  const ws = (name: string) => workspaceIn(folder(name));
  const spareNames = () => readdirSync(spareDir).filter((name) => !name.endsWith('.images'));

  // What a crashed run left: a spare, mounted, and (as an older Twinbox kept them) an attached image file.
  const spares = new SpareImages(spareDir, 16 * MiB);
  spares.refill();
  await spares.settled();
  const [leftName] = spareNames();
  t.ok(leftName, 'a spare was made');
  const left = workspaceIn(join(spareDir, leftName!));
  t.ok(isMountPoint(left), 'and mounted');
  t.equal(loopsOf(workspaceImageOf(left)).length, 1, 'on a loop device');
  const older = join(spareDir, 'spare-1-1.img');
  await writeFile(older, Buffer.alloc(MiB));
  execFileSync(losetup, ['--find', older]);
  t.equal(loopsOf(older).length, 1, "an older Twinbox's spare image is attached");
  const again = new SpareImages(spareDir, 16 * MiB);
  await again.sweep();
  t.same(readdirSync(spareDir), [], 'a sweep removes what an earlier run left');
  t.notOk(isMountPoint(left), 'unmounts it');
  t.same(loopsOf(workspaceImageOf(left)), [], 'and detaches it');
  t.same(loopsOf(older), [], "and the older one's");

  again.refill();
  await again.settled();
  const [spareName] = spareNames();
  const spare = join(spareDir, spareName!);
  t.ok(isMountPoint(workspaceIn(spare)), 'a new spare, mounted');
  t.equal(statSync(workspaceIn(spare)).mode & 0o777, 0o700, 'mode 0700');
  t.same(readdirSync(workspaceIn(spare)), [], 'empty (no lost+found)');
  t.equal(again.take(32 * MiB, ws('x')), undefined, 'a spare of another size is not taken');
  t.equal(
    again.take(16 * MiB, join(data, 'other')),
    undefined,
    'nor for a workspace outside a folder of its own',
  );

  const made = await createWorkspace(ws('a'), 16 * MiB, { spares: again });
  t.same([made.kind, made.enforced, made.reason], ['disk', true, undefined], 'a disk workspace');
  t.ok(isMountPoint(ws('a')), 'mounted at the sandbox workspace');
  t.same(readdirSync(ws('a')), [], 'empty');
  t.notOk(existsSync(spare), 'the spare is gone from the spares');
  t.same(readdirSync(spareDir), [], 'with its image');
  t.equal(loopsOf(workspaceImageOf(ws('a'))).length, 1, 'its loop device follows it to the workspace image');
  await t.rejects(writeFile(join(ws('a'), 'big'), Buffer.alloc(32 * MiB)), { code: 'ENOSPC' }, 'capped');

  const next = await createWorkspace(ws('b'), 16 * MiB, { spares: again });
  t.equal(next.kind, 'disk', 'no spare left: made as before');
  t.ok(isMountPoint(ws('b')), 'and mounted');

  // A folder that is not empty (what else could be there) is not replaced: the workspace is made there.
  again.refill();
  await again.settled();
  const third = join(spareDir, spareNames()[0]!);
  await mkdir(folder('c'), { recursive: true });
  await writeFile(join(folder('c'), 'stray'), 'x');
  const c = await createWorkspace(ws('c'), 16 * MiB, { spares: again });
  t.equal(c.kind, 'disk', 'a disk workspace all the same');
  t.ok(isMountPoint(ws('c')), 'mounted');
  t.notOk(existsSync(third), 'the spare it could not use is removed');
  t.same(loopsOf(workspaceImageOf(workspaceIn(third))), [], 'and detached');

  for (const name of ['a', 'b', 'c']) {
    await removeWorkspaceFolder(folder(name));
    t.notOk(isMountPoint(ws(name)), `${name} unmounted`);
    t.same(loopsOf(workspaceImageOf(ws(name))), [], `${name}: its loop device is gone`);
    t.notOk(existsSync(workspaceImageOf(ws(name))), `${name}: and its image`);
    t.notOk(existsSync(folder(name)), `${name}: and its folder`);
  }
  t.same(readdirSync(join(data, 'workspaces')), [], 'nothing is left of the workspaces');

  again.refill();
  await again.settled();
  t.equal(spareNames().length, 1, 'refilled');
  const last = workspaceIn(join(spareDir, spareNames()[0]!));
  await again.close();
  t.notOk(existsSync(spareDir), 'close removes the spares');
  t.notOk(isMountPoint(last), 'unmounted');
  t.same(loopsOf(workspaceImageOf(last)), [], 'and detaches them');
});
