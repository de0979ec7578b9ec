/**
 * One side of the workspace benchmark's deploy figures (run.ts starts it): DEPLOYS warm deploys of the
 * zero-dep example with full isolation, each deleted after, and one JSON line on stdout: POST→ready and
 * DELETE times, and the kind of workspace each deploy got (the file system mounted at it while ready).
 */
import '../../test/helpers/sandbox-hosts.ts';
import { readFileSync } from 'node:fs';
import { benchTwinbox, exampleFiles, sourceTwin } from '../kit.ts';

const N = Number(process.env.DEPLOYS ?? 5);
const payload = { repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] };

function fsTypeAt(dir: string): string {
  const line = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .find((l) => l.split(' ')[4] === dir);
  return line ? line.split(' - ')[1]!.split(' ')[0]! : 'none';
}

const gh = await sourceTwin({ shop: await exampleFiles('zero-dep') });
const bt = await benchTwinbox(gh, { TWINBOX_DEPLOY_CONCURRENCY: '4' });
const ready: number[] = [];
const deletes: number[] = [];
const kinds = new Set<string>();
const failures: string[] = [];
try {
  await bt.spareReady();
  for (let i = 0; i < N; i++) {
    const run = await bt.deployWarm(payload);
    if (run.record.status === 'ready') {
      ready.push(run.ms);
      kinds.add(fsTypeAt(bt.tb.engine!.deployer.workspaceOf(run.id)));
    } else failures.push(`${run.record.status}: ${run.record.error}`);
    const t = performance.now();
    await bt.del(run.id);
    deletes.push(performance.now() - t);
  }
} finally {
  await bt.close();
  await gh.close();
}
process.stdout.write(`${JSON.stringify({ ready, deletes, kinds: [...kinds], failures })}\n`);
