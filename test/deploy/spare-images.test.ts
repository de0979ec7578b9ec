import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import {
  createWorkspace,
  isMountPoint,
  removeWorkspace,
  SpareImages,
  workspaceImageOf,
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
  const ws = (name: string) => join(data, 'workspaces', name);

  // What a crashed run left: a spare image, attached.
  const spares = new SpareImages(spareDir, 16 * MiB);
  spares.refill();
  await spares.settled();
  const [leftName] = readdirSync(spareDir);
  t.ok(leftName, 'a spare was made');
  const left = join(spareDir, leftName!);
  t.equal(loopsOf(left).length, 1, 'and attached to a loop device');
  const again = new SpareImages(spareDir, 16 * MiB);
  await again.sweep();
  t.same(readdirSync(spareDir), [], 'a sweep removes what an earlier run left');
  t.same(loopsOf(left), [], 'and detaches it');

  again.refill();
  await again.settled();
  const [spareName] = readdirSync(spareDir);
  const spare = join(spareDir, spareName!);
  t.equal(loopsOf(spare).length, 1, 'a new spare, attached');
  t.equal(again.take(32 * MiB), undefined, 'a spare of another size is not taken');

  const made = await createWorkspace(ws('a'), 16 * MiB, { spares: again });
  t.same([made.kind, made.enforced, made.reason], ['disk', true, undefined], 'a disk workspace');
  t.ok(isMountPoint(ws('a')), 'mounted');
  t.same(readdirSync(ws('a')), [], 'empty (no lost+found)');
  t.notOk(existsSync(spare), 'the spare is gone from the spares');
  t.equal(loopsOf(workspaceImageOf(ws('a'))).length, 1, 'its loop device follows it to the workspace image');
  await t.rejects(writeFile(join(ws('a'), 'big'), Buffer.alloc(32 * MiB)), { code: 'ENOSPC' }, 'capped');

  const next = await createWorkspace(ws('b'), 16 * MiB, { spares: again });
  t.equal(next.kind, 'disk', 'no spare left: made as before');

  await removeWorkspace(ws('a'));
  await removeWorkspace(ws('b'));
  t.notOk(isMountPoint(ws('a')), 'unmounted');
  t.same(loopsOf(workspaceImageOf(ws('a'))), [], 'its loop device is gone');
  t.notOk(existsSync(workspaceImageOf(ws('a'))), 'and its image');

  again.refill();
  await again.settled();
  t.equal(readdirSync(spareDir).length, 1, 'refilled');
  const last = join(spareDir, readdirSync(spareDir)[0]!);
  await again.close();
  t.notOk(existsSync(spareDir), 'close removes the spares');
  t.same(loopsOf(last), [], 'and detaches them');
});
