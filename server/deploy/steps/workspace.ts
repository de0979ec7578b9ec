import { execFile } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { chmod, mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { mountPoints } from '../confinement/mounts.ts';
import { TRUSTED_ENV, trustedExecutables } from '../confinement/trusted-executables.ts';

const run = promisify(execFile);

/**
 * `disk`: an ext4 image of the cap, loop-mounted (a write past it fails with ENOSPC; its files are disk,
 * not the sandbox's memory). `tmpfs`: the cap is enforced too, but the files count as the writer's memory
 * (where no loop device can be had). `directory`: nothing caps it (Twinbox is not root).
 */
export type WorkspaceKind = 'disk' | 'tmpfs' | 'directory';

export interface Workspace {
  dir: string;
  /** True when a write past `bytes` fails with ENOSPC (`disk` or `tmpfs`). */
  enforced: boolean;
  kind: WorkspaceKind;
  /** Why the workspace is not a capped disk image, when it is not. */
  reason?: string;
  /**
   * With `deferDetach`: the loop device's detach (`losetup -d`, which marks the mounted device autoclear)
   * still running; the workspace is usable meanwhile. Settled (never rejects) otherwise.
   */
  detached: Promise<void>;
}

/** A step of making a disk workspace failed; `createWorkspace` falls back to a tmpfs and says why. */
export class DiskWorkspaceError extends Error {
  readonly kind = 'disk-workspace';
}

function canonical(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    // Not there (yet, or any more): its parent may still be a symlink the kernel would resolve.
    try {
      return join(realpathSync(dirname(path)), basename(path));
    } catch {
      return resolve(path);
    }
  }
}

export function isMountPoint(dir: string): boolean {
  return mountPoints().includes(canonical(dir));
}

/**
 * The file-system image behind the disk workspace at `dir`: in a folder beside the workspaces' parent
 * (`<dataDir>/workspaces.images/<name>.img` for `<dataDir>/workspaces/<name>`), not inside it, so a
 * listing or sweep of the parent sees workspaces only and a kept workspace's image is never mistaken for
 * a leftover.
 */
export function workspaceImageOf(dir: string): string {
  const parent = resolve(dirname(dir));
  return join(`${parent}.images`, `${basename(dir)}.img`);
}

/**
 * A sandbox's workspace is a directory of this name in a folder of the sandbox's own
 * (`<dataDir>/workspaces/<id>/files`, its image `<dataDir>/workspaces/<id>.images/files.img`), not the
 * folder itself: the kernel refuses to rename a mount point, but not its parent, so a spare image
 * mounted ahead of demand in a spare folder becomes a sandbox's workspace by renaming the folder
 * (SpareImages), without a `mount` on the deploy's path.
 */
export const WORKSPACE_DIR = 'files';

/** Where the workspace of a sandbox's `folder` is (WORKSPACE_DIR). */
export function workspaceIn(folder: string): string {
  return join(folder, WORKSPACE_DIR);
}

/**
 * Removes a sandbox's workspace folder: its workspace (WORKSPACE_DIR) with its image, then whatever else
 * is at the folder, an older Twinbox's workspace mounted at the folder itself included.
 */
export async function removeWorkspaceFolder(folder: string): Promise<void> {
  await removeWorkspace(workspaceIn(folder));
  await removeWorkspace(folder);
}

/**
 * A fresh, empty workspace at `dir` (mode 0700) holding at most `bytes`. As root: a sparse ext4 image of
 * `bytes` (workspaceImageOf), loop-mounted at `dir` with nosuid,nodev: a write past the cap gets ENOSPC,
 * and what is written is disk, not the sandbox's memory (its page cache is reclaimable). Where no loop
 * device can be had, a tmpfs of `bytes` (the cap holds, but the files count as the writer's memory), with
 * the reason. Not root: a plain directory, `enforced: false` and the reason. Anything already at `dir`
 * (a workspace of any kind, its image) is removed first. `kind: 'tmpfs'` skips the disk image (the
 * workspace benchmark compares the two).
 */
export async function createWorkspace(
  dir: string,
  bytes: number,
  opts: { kind?: 'disk' | 'tmpfs'; spares?: SpareImages; deferDetach?: boolean } = {},
): Promise<Workspace> {
  const detached = Promise.resolve();
  // A new sandbox's path holds nothing, and then there is nothing to remove: no mount (its directory is
  // missing), no loop device (one is only attached to an image that exists, and detached before its image
  // is removed). Skipping the removal's checks saves a scan of every loop device, 5-15 ms.
  if (
    lstatSync(dir, { throwIfNoEntry: false }) ||
    lstatSync(workspaceImageOf(dir), { throwIfNoEntry: false })
  )
    await removeWorkspace(dir);
  // A spare is already mounted (SpareImages): its folder becomes this workspace's folder.
  const spare = opts.kind === 'tmpfs' ? undefined : opts.spares?.take(bytes, dir);
  if (spare && (await placeSpare(dir, spare))) return { dir, enforced: true, kind: 'disk', detached };
  await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
  await mkdir(dir, { mode: 0o700 });
  const { mount } = trustedExecutables();
  if (!mount)
    return { dir, enforced: false, kind: 'directory', reason: '`mount` is not installed', detached };
  if (process.getuid?.() !== 0)
    return {
      dir,
      enforced: false,
      kind: 'directory',
      reason: 'Twinbox is not root, so it cannot mount a size-capped file system',
      detached,
    };
  let noDisk = 'a tmpfs was asked for';
  if (opts.kind !== 'tmpfs') {
    try {
      const mounted = await mountDiskImage(dir, bytes);
      if (!opts.deferDetach) await mounted.detached;
      return { dir, enforced: true, kind: 'disk', detached: mounted.detached };
    } catch (error) {
      noDisk = (error as Error).message;
      await removeWorkspace(dir);
      await mkdir(dir, { mode: 0o700 });
    }
  }
  const size = Math.max(4096, Math.floor(bytes));
  // An inode per KiB, so empty files cannot exhaust the kernel either.
  const inodes = Math.max(4096, Math.floor(size / 1024));
  try {
    await run(
      mount,
      [
        '-t',
        'tmpfs',
        '-o',
        `size=${size},nr_inodes=${inodes},mode=0700,nosuid,nodev`,
        'twinbox-workspace',
        dir,
      ],
      { env: TRUSTED_ENV },
    );
    return {
      dir,
      enforced: true,
      kind: 'tmpfs',
      reason: `a tmpfs, whose files count as the sandbox's memory, since no disk image could be mounted: ${noDisk}`,
      detached,
    };
  } catch (error) {
    return {
      dir,
      enforced: false,
      kind: 'directory',
      reason: `no disk image (${noDisk}), and mounting a tmpfs failed: ${stderrOf(error)}`,
      detached,
    };
  }
}

function stderrOf(error: unknown): string {
  return ((error as { stderr?: string }).stderr ?? '').trim() || (error as Error).message;
}

/** Runs a helper; a failure becomes a DiskWorkspaceError naming the step. */
async function diskStep(step: string, file: string | undefined, args: string[]): Promise<string> {
  if (!file) throw new DiskWorkspaceError(`${step}: the program is not installed`);
  try {
    return (await run(file, args, { env: TRUSTED_ENV })).stdout.trim();
  } catch (error) {
    throw new DiskWorkspaceError(`${step} failed: ${stderrOf(error)}`);
  }
}

/**
 * mkfs options, chosen for speed on a new sparse file (it reads as zeros, so there is nothing to zero or
 * discard): no journal (a workspace does not outlive a reboot anyway, docs/deploy.md), no blocks reserved
 * for root, no reserve for online growth, an inode per 8 KiB (node_modules is many small files).
 */
const MKFS_OPTIONS = [
  '-q',
  '-F',
  '-m',
  '0',
  '-i',
  '8192',
  '-O',
  '^has_journal,^resize_inode',
  '-E',
  'lazy_itable_init=1,lazy_journal_init=1,nodiscard',
];

/** A new, empty ext4 image of `bytes` at `image`, sparse: only what is written takes space on disk. */
async function formatImage(image: string, bytes: number): Promise<void> {
  const h = trustedExecutables();
  for (const name of ['mkfs.ext4', 'losetup'] as const)
    if (!h[name]) throw new DiskWorkspaceError(`\`${name}\` is not installed (Debian: e2fsprogs, mount)`);
  const file = await openImage(image);
  try {
    await file.truncate(Math.max(1024 * 1024, Math.floor(bytes)));
  } finally {
    await file.close();
  }
  await diskStep('mkfs.ext4', h['mkfs.ext4'], [...MKFS_OPTIONS, image]);
}

async function mountDiskImage(dir: string, bytes: number): Promise<{ detached: Promise<void> }> {
  const image = workspaceImageOf(dir);
  await formatImage(image, bytes);
  return mountAttached(dir, await attachLoop(image));
}

/**
 * A spare (SpareImages: formatted, mounted in a folder of its own, seen by nothing) becomes the workspace
 * at `dir`: its images folder, then its folder, renamed to `dir`'s (the mount goes with its parent; the
 * loop device follows its file's name). Two renames, no program run. False, with the spare removed, when
 * they fail (`dir`'s folder is not empty): the workspace is then made as without a spare.
 */
async function placeSpare(dir: string, spare: SpareImage): Promise<boolean> {
  const folder = dirname(dir);
  try {
    await mkdir(dirname(folder), { recursive: true, mode: 0o700 });
    // What a suspended tmpfs workspace's removal leaves: its folder, empty. rename() replaces an empty one.
    await rmdir(folder).catch(() => {});
    await rename(`${spare.folder}.images`, `${folder}.images`);
    await rename(spare.folder, folder);
    return true;
  } catch {
    await removeWorkspaceFolder(spare.folder);
    await removeWorkspace(dir);
    return false;
  }
}

/**
 * Mounts the ext4 on loop `device` at `dir`; resolves, once mounted, to the device's detach, which runs on
 * (the kernel frees a detached device at the unmount). A failed mount detaches it before rejecting.
 */
async function mountAttached(dir: string, device: string): Promise<{ detached: Promise<void> }> {
  const h = trustedExecutables();
  // Detaching a mounted loop device marks it autoclear: the kernel detaches it at the unmount, so no
  // crash after it leaks the device (a crash before it leaves one attached to the image, which the
  // workspace's removal and the start's sweep detach). Unmounted (the mount failed), it is detached now.
  const detach = () =>
    diskStep('losetup -d', h.losetup, ['-d', device]).then(
      () => {},
      () => {},
    );
  try {
    // noinit_itable: the unused inode tables of a sparse image already read as zeros, so the kernel's
    // background zeroing would only write them out.
    await diskStep('mount', h.mount, ['-t', 'ext4', '-o', 'nosuid,nodev,noatime,noinit_itable', device, dir]);
  } catch (error) {
    await detach();
    throw error;
  }
  // An exec of its own (5-15 ms): the workspace is usable before it ends (createWorkspace's deferDetach).
  const detached = detach();
  await chmod(dir, 0o700);
  // mkfs's lost+found: the workspace starts empty (e2fsck, its only user, never runs on these).
  await rmdir(join(dir, 'lost+found')).catch(() => {});
  // In an object: an async function's returned promise would be awaited.
  return { detached };
}

/** A new image file; its folder may vanish between mkdir and open (a removal rmdirs it once empty). */
async function openImage(image: string) {
  for (let attempt = 0; ; attempt++) {
    await mkdir(dirname(image), { recursive: true, mode: 0o700 });
    try {
      return await open(image, 'wx', 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 4) throw error;
    }
  }
}

/** An ext4 image formatted and mounted ahead of demand, at workspaceIn(folder). */
interface SpareImage {
  folder: string;
  bytes: number;
}

/**
 * Workspace images made ahead of demand, like the spare pods: formatted (mkfs), attached to a loop device
 * and mounted at workspaceIn(`<dataDir>/workspaces.spare/<spare>`), so that a deploy's workspace is two
 * renames (placeSpare): no `mkfs`, `losetup` or `mount` on its way to ready. A spare is an empty file
 * system no sandbox has seen, in a folder only Twinbox can enter (0700); it is taken once and never comes
 * back. Where no disk image can be made (not root, no loop devices), none is kept and createWorkspace
 * makes its workspace as before.
 */
export class SpareImages {
  private readonly spares: SpareImage[] = [];
  private making: Promise<void> | undefined;
  private stopped = false;
  private disabled = false;
  private counter = 0;

  constructor(
    private readonly dir: string,
    private readonly bytes: number,
    private readonly count = 1,
  ) {}

  /** Removes spares an earlier run left (unmounted, their loop devices detached). Call before refill(). */
  async sweep(): Promise<void> {
    const names = await readdir(this.dir).catch((): string[] => []);
    for (const name of new Set(names.map((n) => n.replace(/\.images$/, '')))) {
      const path = join(this.dir, name);
      if (lstatSync(path, { throwIfNoEntry: false })?.isFile()) {
        // An older Twinbox kept its spares here as image files, attached.
        await detachAll(path);
        await rm(path, { force: true });
      } else await removeWorkspaceFolder(path);
    }
  }

  /** A spare of `bytes` for the workspace at `dir`, if one is ready (refill() once the deploy is done). */
  take(bytes: number, dir: string): SpareImage | undefined {
    if (basename(dir) !== WORKSPACE_DIR || this.spares[0]?.bytes !== bytes) return undefined;
    return this.spares.shift();
  }

  /** Makes spares up to the count, one at a time, in the background; a failure stops making them. */
  refill(): void {
    if (this.making || this.stopped || this.disabled || process.getuid?.() !== 0) return;
    this.making = (async () => {
      while (!this.stopped && this.spares.length < this.count) {
        const folder = join(this.dir, `spare-${process.pid}-${++this.counter}`);
        try {
          await mkdir(this.dir, { recursive: true, mode: 0o700 });
          await mkdir(folder, { mode: 0o700 });
          const dir = workspaceIn(folder);
          await mkdir(dir, { mode: 0o700 });
          const image = workspaceImageOf(dir);
          await formatImage(image, this.bytes);
          const mounted = await mountAttached(dir, await attachLoop(image));
          await mounted.detached;
          if (this.stopped) throw new Error('stopped');
          this.spares.push({ folder, bytes: this.bytes });
        } catch {
          this.disabled = !this.stopped;
          await removeWorkspaceFolder(folder).catch(() => {});
          return;
        }
      }
    })().finally(() => (this.making = undefined));
  }

  /** Resolves once the spares being made (if any) are made: the benchmark's and tests' "warm". */
  async settled(): Promise<void> {
    await this.making;
  }

  /** Stops making spares and removes those there are. */
  async close(): Promise<void> {
    this.stopped = true;
    await this.making;
    for (const spare of this.spares.splice(0)) await removeWorkspaceFolder(spare.folder);
    await rmdir(this.dir).catch(() => {});
  }
}

/** How long a removal waits for the kernel to detach a workspace's loop device. */
const DETACH_WAIT_MS = 10_000;

/** Detaches every loop device whose backing file is `image`. */
async function detachAll(image: string): Promise<void> {
  const { losetup } = trustedExecutables();
  for (const device of loopDevicesOf(image))
    if (losetup) await run(losetup, ['-d', device], { env: TRUSTED_ENV }).catch(() => {});
  // The kernel detaches a device after its last user lets go, and autoclear's detach on unmount runs in
  // the background: `losetup -d` and the unmount can both return while the device is still attached
  // (seen with six test files at once on 2 cores). Wait for it, a while, so that a removed workspace is
  // gone when this returns; a device still held after that is found by the next sweep.
  const deadline = Date.now() + DETACH_WAIT_MS;
  while (loopDevicesOf(image).length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One attach at a time in this process: two at once would both be told the same free device. */
let attaching: Promise<unknown> = Promise.resolve();

/**
 * Attaches `image` to a free loop device (direct I/O: the data is cached once, in the workspace's file
 * system, not again for the image) and returns its path. Where /dev is not a devtmpfs (a container with a
 * fixed set of /dev/loopN), the kernel adds a device but no node appears: the node is made here.
 */
async function attachLoop(image: string): Promise<string> {
  const attach = async (): Promise<string> => {
    const losetup = trustedExecutables().losetup;
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        // Its node is checked only once an attach failed: one program run fewer per workspace.
        if (attempt > 0) await ensureFreeLoopNode();
        const device = await diskStep('losetup', losetup, ['--find', '--show', '--direct-io=on', image]);
        if (!/^\/dev\/loop\d+$/.test(device)) throw new DiskWorkspaceError(`losetup printed ${device}`);
        return device;
      } catch (error) {
        lastError = error;
      }
    }
    throw lastError;
  };
  const result = attaching.then(attach, attach);
  attaching = result.catch(() => {});
  return result;
}

/** `losetup -f` asks the kernel for a free device (adding one when none is free); its node must exist. */
async function ensureFreeLoopNode(): Promise<void> {
  const h = trustedExecutables();
  const device = await diskStep('losetup -f', h.losetup, ['-f']);
  const index = /^\/dev\/loop(\d+)$/.exec(device)?.[1];
  if (!index) throw new DiskWorkspaceError(`losetup -f printed ${device}`);
  if (existsSync(device)) return;
  let numbers = `7:${index}`;
  try {
    numbers = readFileSync(`/sys/block/loop${index}/dev`, 'utf8').trim();
  } catch {
    // sysfs not mounted: the loop driver's major is 7
  }
  const [major, minor] = numbers.split(':');
  await diskStep('mknod', h.mknod, ['-m', '0600', device, 'b', major!, minor!]);
}

/** Loop devices whose backing file is `image` (also once the file is deleted). */
function loopDevicesOf(image: string): string[] {
  const target = canonical(image);
  let names: string[] = [];
  try {
    names = readdirSync('/sys/block').filter((name) => /^loop\d+$/.test(name));
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const name of names) {
    let backing = '';
    try {
      backing = readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').replace(/\n$/, '');
    } catch {
      continue; // not attached
    }
    if (backing === target || backing === `${target} (deleted)`) found.push(`/dev/${name}`);
  }
  return found;
}

/**
 * Unmounts (lazily when something still holds it open) and removes a workspace of any kind (a disk
 * image, a tmpfs of an older Twinbox, a plain directory), with its image and loop device. Stop the
 * sandbox's processes first (Isolation.release): a lazy unmount frees the tmpfs's memory, or the loop
 * device and the image's disk space, only once they exit.
 */
export async function removeWorkspace(dir: string): Promise<void> {
  const { umount } = trustedExecutables();
  // A workspace made twice without removal has two mounts stacked: take them all off.
  for (let i = 0; umount && i < 16 && isMountPoint(dir); i++) {
    try {
      await run(umount, [canonical(dir)], { env: TRUSTED_ENV });
    } catch {
      await run(umount, ['-l', canonical(dir)], { env: TRUSTED_ENV }).catch(() => {});
    }
  }
  if (isMountPoint(dir)) throw new Error(`could not unmount the workspace ${dir}`);
  const image = workspaceImageOf(dir);
  // Normally autoclear already detached it; a crash between attach and mount leaves one attached.
  await detachAll(image);
  // The image before the directory: a crash in between leaves a directory, which a sweep finds.
  await rm(image, { force: true });
  await rmdir(dirname(image)).catch(() => {}); // only once empty
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Removes the sandbox workspace folders under `parentDir` (removeWorkspaceFolder) a previous run left,
 * except those named in `keep` (sandboxes to resume), with their images, also images whose folder is gone
 * (an older Twinbox's too, in `<parentDir>.images`); returns the names removed.
 */
export async function sweepWorkspaces(
  parentDir: string,
  keep: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  const names = (await readdir(parentDir).catch(() => [] as string[])).map((name) =>
    name.replace(/\.images$/, ''),
  );
  const images = (await readdir(`${resolve(parentDir)}.images`).catch(() => [] as string[]))
    .filter((name) => name.endsWith('.img'))
    .map((name) => name.slice(0, -'.img'.length));
  const orphans = [...new Set([...names, ...images])].filter((name) => !keep.has(name));
  for (const name of orphans) await removeWorkspaceFolder(join(parentDir, name));
  return orphans;
}
