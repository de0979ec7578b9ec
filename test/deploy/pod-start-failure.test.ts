import t, { type Test } from 'tap';
import { join } from 'node:path';
import { pino } from 'pino';
import type { Isolation } from '../../server/deploy/confinement/isolation.ts';
import { PodManager } from '../../server/deploy/pods/pods.ts';
import {
  parseStartFailure,
  PodStartError,
  startFailureLine,
  startFailureReason,
} from '../../server/pod/start-failure.ts';
import { createUser } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, exampleFiles, githubToDeployFrom } from '../helpers/deploy.ts';
import { isolationFor, requireHost, runnableModes, scratch } from '../security/isolation-fixtures.ts';

/** A sandbox `error` a user can act on: one line, no stack frame, no Node banner. */
function assertOneSentence(t: Test, error: string, step: RegExp) {
  t.notMatch(error, /\n/, 'one line');
  t.match(error, /^The sandbox pod could not start: /, 'names the step that failed');
  t.match(error, step, 'and why');
  t.notMatch(error, /\bat .+[:(]\d+/, 'no stack frame');
  t.notMatch(error, /Node\.js v\d/, 'no Node banner');
  t.notMatch(error, /syscall|errno:|\{ *code/, 'no error object dump');
}

t.test('the report line and its wording', async (t) => {
  const crash = [
    'node:internal/errors:541',
    '      throw error;',
    'Error: listen EROFS: read-only file system /x/ctl.sock',
    '    at Server.setupListenHandle [as _listen2] (node:net:1880:21)',
    startFailureLine({ step: 'control_socket', code: 'EROFS' }).trim(),
    "  syscall: 'listen',",
    'Node.js v20.20.2',
  ].join('\n');
  const report = parseStartFailure(crash);
  t.same(report, { step: 'control_socket', code: 'EROFS' }, 'the marked line, not the trace around it');
  const reason = startFailureReason(report, { code: 3, signal: null }, '/data/pods/ab12cd34');
  t.match(
    reason,
    /could not listen on its control socket \(EROFS\): its directory \/data\/pods\/ab12cd34 is not writable/,
  );
  t.notOk(
    parseStartFailure(
      `${startFailureLine({ step: 'control_socket' }).trim().replace('control_socket', 'rm -rf')}`,
    ),
    'an unknown step is no report',
  );
  t.same(
    parseStartFailure(startFailureLine({ step: 'dns_guard', code: 'not a code\n at x' } as never)),
    { step: 'dns_guard' },
    'a code that is not an errno code is dropped',
  );
  // No report at all (Node died loading a module, a signal): the exit is worded, the trace is not.
  const bare = startFailureReason(
    parseStartFailure('    at x (y.ts:1:2)\nNode.js v20.20.2'),
    { code: 1, signal: null },
    '/d',
  );
  t.match(bare, /^its process exited with code 1 before it was ready/);
  t.match(startFailureReason(undefined, { code: null, signal: 'SIGKILL' }, '/d'), /memory limit/);
});

t.test(
  'a pod whose directory is read-only inside its sandbox: the old failure, in one sentence',
  async (t) => {
    if (!requireHost(t, { bwrap: true, cgroups: true })) return;
    const mode = runnableModes().find((m) => m !== 'process-group');
    t.ok(mode, `bubblewrap runs here (${runnableModes().join(', ')})`);
    if (!mode) return;
    const real = isolationFor(t, mode);
    // What the checkout's read-only bind did to a pod directory inside it before mounts were ordered: the
    // pod's directory bound read-only over its writable bind.
    const covering: Isolation = {
      ...real,
      wrap(spec) {
        const argv = real.wrap(spec);
        const at = argv.indexOf('--unshare-pid');
        argv.splice(at, 0, '--ro-bind', spec.cwd, spec.cwd);
        return argv;
      },
    };
    const dataDir = await scratch(t, 'twinbox-podfail-');
    const pods = new PodManager({
      dataDir,
      isolation: covering,
      installEgress: [],
      memoryBytes: 512 * 1024 * 1024,
      twinBodyBytes: 1024 * 1024,
      logger: pino({ level: 'silent' }),
      readyTimeoutMs: 120_000,
    });
    t.teardown(() => pods.close());
    const error = await pods.acquire('sb-1').then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(error instanceof PodStartError, 'a typed start failure');
    const message = (error as Error).message;
    assertOneSentence(
      t,
      message,
      /could not listen on its control socket \((EROFS|EACCES)\): its directory .+ is not writable/,
    );
    t.match(
      (error as PodStartError).output,
      /twinbox-pod-start-failure/,
      "the pod's own output is kept for the deploy log",
    );
  },
);

t.test('a deploy whose pod cannot start fails with that sentence, through the API', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'zero-dep', files: await exampleFiles('zero-dep') });
  // A data directory so deep that a pod's socket paths do not fit in a Unix socket address.
  const dataDir = join(await scratch(t, 'twinbox-deep-'), 'd'.repeat(90));
  const tb = await deployingTwinbox(t, gh, {}, dataDir);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/zero-dep', branch: 'main' });
  t.equal(sandbox.status, 'failed');
  assertOneSentence(
    t,
    sandbox.error,
    /too long for its Unix sockets .+set TWINBOX_DATA_DIR to a shorter path/,
  );
  t.match(sandbox.error, `(see GET /sandboxes/${sandbox.sandbox_id}/logs)`, 'and where the details are');
});
