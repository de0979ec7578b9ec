import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { chmod, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Cgroups } from '../../server/deploy/confinement/cgroups.ts';
import { createIsolation } from '../../server/deploy/confinement/isolation.ts';
import { SandboxLogs } from '../../server/deploy/confinement/logs.ts';
import { runStep } from '../../server/deploy/confinement/processes.ts';
import {
  createWorkspace,
  isMountPoint,
  removeWorkspace,
  sweepWorkspaces,
} from '../../server/deploy/steps/workspace.ts';
import {
  isolationFor,
  LIMITS,
  MiB,
  requireHost,
  runIn,
  runnableModes,
  bubblewrapModes,
  sandboxId,
  scratch,
  startIn,
  testCgroups,
} from './isolation-fixtures.ts';

t.test('process count: a fork loop stops at the limit', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of runnableModes()) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      const id = sandboxId();
      const result = await runIn(isolation, {
        sandboxId: id,
        cwd: await scratch(t),
        command: 'i=0; while [ $i -lt 400 ]; do sleep 30 & i=$((i + 1)); echo "started $i"; done',
      });
      const started = Math.max(0, ...[...result.output.matchAll(/started (\d+)/g)].map((m) => Number(m[1])));
      t.notOk(result.ok, 'the loop failed');
      t.match(result.output, /Cannot fork|Resource temporarily unavailable/);
      t.ok(started < LIMITS.pids, `${started} sleeps started, under the limit of ${LIMITS.pids}`);
      const peak = isolation.usage(id)?.pidsPeak;
      // Kernels since 6.1 report pids.peak in both cgroup hierarchies (the machines here run 6.x).
      t.type(peak, 'number', 'the kernel reports the peak');
      t.ok(peak! <= LIMITS.pids, `at most ${peak} processes at once`);
      await isolation.release(id);
      t.same(isolation.usage(id)?.pids, undefined, 'all gone after release');
    });
  }
});

t.test('memory: allocating past the limit gets the sandbox killed, not Twinbox', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of runnableModes()) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      const id = sandboxId();
      const cwd = await scratch(t);
      const before = process.memoryUsage().rss;
      const result = await runIn(isolation, {
        sandboxId: id,
        cwd,
        // RLIMIT_DATA far above the cgroup's 128 MiB, so it is the cgroup that stops this.
        memoryBytes: 8192 * MiB,
        command: `${process.execPath} -e "const a = []; for (let i = 0; i < 512; i++) a.push(Buffer.alloc(1 << 20, 1)); console.log('sur' + 'vived')"`,
      });
      t.notOk(result.ok, `stopped: ${result.error}`);
      t.notMatch(result.output, /survived/);
      const usage = isolation.usage(id)!;
      t.ok((usage.oomKills ?? 0) > 0, `the OOM killer ran in the sandbox (${usage.oomKills} kills)`);
      t.ok((usage.memoryPeakBytes ?? 0) <= LIMITS.memoryBytes, `peak ${usage.memoryPeakBytes} <= limit`);
      t.ok(process.memoryUsage().rss < before + 64 * MiB, 'Twinbox did not grow');
      const after = await runIn(isolation, { sandboxId: id, cwd, command: 'echo still-works' });
      t.ok(after.ok, 'the sandbox runs the next step');
    });
  }
});

t.test('CPU: a busy loop gets at most its quota', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const mode = runnableModes()[0]!;
  const isolation = isolationFor(t, mode);
  const id = sandboxId();
  // Two busy processes for ~2 s: the quota (0.25 cores) is for the whole sandbox, not per process.
  const result = await runIn(isolation, {
    sandboxId: id,
    cwd: await scratch(t),
    command:
      'spin() { while :; do :; done; }; spin & a=$!; spin & b=$!; /usr/bin/sleep 2; kill $a $b; wait 2>/dev/null; echo done',
  });
  t.ok(result.ok, result.error ?? '');
  const used = isolation.usage(id)!.cpuUsec!;
  const allowed = LIMITS.cpus * result.wallMs * 1000 * 1.3;
  t.ok(used > 0, 'usage is measured');
  t.ok(
    used <= allowed,
    `${(used / 1e6).toFixed(3)} s of CPU in ${(result.wallMs / 1e3).toFixed(2)} s wall (allowed ${(allowed / 1e6).toFixed(3)})`,
  );
  t.comment(`cpu: ${used} us used over ${result.wallMs} ms wall, quota ${LIMITS.cpus} cores (${mode})`);
});

t.test('/tmp: writing past tmpBytes fails with ENOSPC', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of bubblewrapModes(t)) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      t.ok(isolation.capabilities.tmpSize);
      const result = await runIn(isolation, {
        sandboxId: sandboxId(),
        cwd: await scratch(t),
        command: `head -c ${3 * LIMITS.tmpBytes} /dev/zero > /tmp/big; s=$?; ls -l /tmp/big; exit $s`,
      });
      t.notOk(result.ok);
      t.match(result.output, /No space left on device/);
      const size = Number(/ (\d+) \w+ +\d+ [\d:]+ \/tmp\/big/.exec(result.output)?.[1]);
      t.ok(size <= LIMITS.tmpBytes, `wrote ${size} bytes at most`);
    });
  }
});

t.test('workspace: a file system of the cap; writing past it fails; removed and swept', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const parent = await scratch(t);
  const dir = join(parent, 'ws-1');
  const workspace = await createWorkspace(dir, 8 * MiB);
  t.teardown(() => removeWorkspace(dir));
  t.ok(workspace.enforced, workspace.reason ?? 'mounted');
  t.ok(isMountPoint(dir));
  t.equal(statSync(dir).mode & 0o777, 0o700);
  const isolation = isolationFor(t, runnableModes()[0]!);
  const result = await runIn(isolation, {
    sandboxId: sandboxId(),
    cwd: dir,
    command: `head -c ${20 * MiB} /dev/zero > big`,
  });
  t.notOk(result.ok);
  t.match(result.output, /No space left on device/);
  t.ok(statSync(join(dir, 'big')).size <= 8 * MiB);

  await removeWorkspace(dir);
  t.notOk(existsSync(dir), 'removed');
  t.notOk(isMountPoint(dir), 'unmounted');

  // A crash leaves mounted workspaces behind; the sweep at start takes them all.
  await createWorkspace(join(parent, 'ws-2'), MiB);
  await createWorkspace(join(parent, 'ws-3'), MiB);
  t.same((await sweepWorkspaces(parent)).sort(), ['ws-2', 'ws-3']);
  t.same(readdirSync(parent), []);
  t.notOk(isMountPoint(join(parent, 'ws-2')));
});

t.test('log: an app printing 50 MiB leaves at most the cap on disk, newest output readable', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const isolation = isolationFor(t, runnableModes()[0]!);
  const dir = await scratch(t);
  const cap = MiB;
  const logs = new SandboxLogs(join(dir, 'logs'), 64 * 1024, cap);
  const id = sandboxId();
  const log = await logs.open(id);
  await runStep(
    'app',
    {
      sandboxId: id,
      cwd: await scratch(t),
      memoryBytes: 1024 * MiB,
      // The pause lets the last line through even if the flood outran the disk (then it is dropped).
      command: `head -c ${50 * MiB} /dev/zero | tr '\\0' x; echo; /usr/bin/sleep 0.3; echo THE-END`,
    },
    { PATH: '/usr/bin:/bin' },
    isolation,
    log,
    { timeoutMs: 60_000 },
  );
  await logs.close(id);
  const files = readdirSync(join(dir, 'logs'));
  const total = files.reduce((sum, f) => sum + statSync(join(dir, 'logs', f)).size, 0);
  t.ok(total <= cap, `${total} bytes on disk in ${files.join(', ')}`);
  t.ok(files.length <= 2);
  const text = await logs.read(id);
  t.ok(text.length <= 64 * 1024);
  t.match(text, /THE-END\n$/, 'the newest output is what is read');
});

t.test('capabilities: none inside in every mode; setuid binaries gain nothing', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of runnableModes()) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      t.ok(isolation.capabilities.noPrivileges);
      // A plain directory (not a nosuid mount), with a setuid-root copy of cat in it.
      const cwd = await scratch(t);
      const suidCat = join(cwd, 'suid-cat');
      await copyFile('/usr/bin/cat', suidCat);
      await chmod(suidCat, 0o4755);
      const result = await runIn(isolation, {
        sandboxId: sandboxId(),
        cwd,
        command: 'grep -E "^(Cap|NoNewPrivs|Uid)" /proc/self/status; echo SUID; ./suid-cat /proc/self/status',
      });
      t.ok(result.ok, result.error ?? '');
      const [own, suid] = result.output.split('SUID');
      t.match(own, /CapEff:\s+0000000000000000/);
      t.match(own, /CapPrm:\s+0000000000000000/);
      t.match(own, /NoNewPrivs:\s+1/);
      t.match(suid, /CapEff:\s+0000000000000000/, 'the setuid binary has no capabilities');
      const uid = /Uid:\s+(\d+)\s+(\d+)/.exec(suid!)!;
      t.equal(uid[1], uid[2], 'and no other effective uid');
      if (mode === 'bubblewrap-userns') {
        t.equal(uid[1], '65534');
        const nested = await runIn(isolation, {
          sandboxId: sandboxId(),
          cwd,
          command: '/usr/bin/unshare --user /bin/true && echo NESTED-USERNS',
        });
        t.notMatch(nested.output, /NESTED-USERNS/, 'no user namespace of its own');
      }
    });
  }
});

t.test('release: no process of the sandbox is left and its cgroups are gone', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of runnableModes()) {
    await t.test(mode, async (t) => {
      const cgroups = testCgroups(t);
      const isolation = createIsolation(mode, LIMITS, { cgroups });
      const id = sandboxId();
      const cwd = await scratch(t);
      // Processes that leave the process group (a new session, double fork) still stay in the cgroup.
      const { proc } = await startIn(
        t,
        isolation,
        {
          sandboxId: id,
          cwd,
          command:
            'for i in 1 2 3 4 5; do /usr/bin/sleep 300 & done; /usr/bin/setsid /usr/bin/sleep 300 & ' +
            '(/usr/bin/sleep 300 &) ; echo ready; wait',
        },
        /ready/,
      );
      t.ok(cgroups.pids(id).length >= 7, `${cgroups.pids(id).length} processes in the cgroup`);
      const pids = cgroups.pids(id);
      await isolation.release(id);
      t.same(cgroups.pids(id), []);
      t.notOk(
        pids.some((pid) => stillInSandbox(pid, id)),
        'every one is dead',
      );
      for (const dir of cgroups.dirs(id)) t.notOk(existsSync(dir), `${dir} removed`);
      await proc.exited;
    });
  }
});

/** Is `pid` a live process in a cgroup of sandbox `id`? (A reused pid is someone else's.) */
function stillInSandbox(pid: number, id: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cgroup`, 'utf8').includes(id);
  } catch {
    return false;
  }
}

t.test('killLeftovers: what a crashed run left in its cgroups is killed and removed', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const instance = `crash-${process.pid}`;
  const crashed = createIsolation(runnableModes()[0]!, LIMITS, {
    cgroups: Cgroups.open(LIMITS, { instance }),
  });
  const ids = [sandboxId(), sandboxId()];
  const cwd = await scratch(t);
  for (const id of ids)
    await startIn(
      t,
      crashed,
      { sandboxId: id, cwd, command: 'echo ready; exec /usr/bin/sleep 300' },
      /ready/,
    );
  // The next run: a new Isolation of the same instance, knowing nothing of those sandboxes.
  const cgroups = Cgroups.open(LIMITS, { instance });
  t.teardown(() => cgroups.close());
  const next = createIsolation(runnableModes()[0]!, LIMITS, { cgroups });
  t.same((await next.killLeftovers()).filter((id) => id.startsWith('sb-')).sort(), ids.sort());
  for (const id of ids) {
    t.same(cgroups.pids(id), []);
    for (const dir of cgroups.dirs(id)) t.notOk(existsSync(dir));
  }
});
