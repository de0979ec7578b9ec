/**
 * Profiles one twin's benchmark call (bench/twins/calls.ts) in-process, SDK client and twin in one process as
 * in bench/twins: the V8 CPU profile (what `node --cpu-prof` writes) covers the timed calls only, not module
 * loading or the warm-up, and is written to the path given; bench/twins/profile-summary.ts summarizes it.
 * Run: npx tsx bench/twins/profile.ts github 3000 /tmp/<dir>/github.cpuprofile
 *      npx tsx bench/twins/profile-summary.ts /tmp/<dir>/github.cpuprofile
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinCalls } from './calls.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const twin = process.argv[2] ?? 'github';
const calls = Number(process.argv[3] ?? 2000);
const out = process.argv[4] ?? `${twin}.cpuprofile`;
const spec = twinCalls[twin];
if (!spec) throw new Error(`bench/twins/calls.ts has no call for ${twin}`);
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-profile-'));
const host = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
try {
  const entry = (
    await host.start('profile', [twin], {
      adminToken: 'bench',
      ...(spec.seed ? { seeds: { [twin]: spec.seed } } : {}),
    })
  )[twin]!;
  const call = await spec.prepare(entry.env_vars);
  for (let i = 0; i < 200; i++) await call();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  const started = performance.now();
  for (let i = 0; i < calls; i++) await call();
  const elapsed = performance.now() - started;
  const { profile } = await session.post('Profiler.stop');
  session.disconnect();
  await writeFile(out, JSON.stringify(profile));
  console.log(
    `${twin} ${spec.call}: mean ${(elapsed / calls).toFixed(3)} ms over ${calls} calls; profile in ${out}`,
  );
} finally {
  await host.close();
  await rm(dataDir, { recursive: true, force: true });
}
