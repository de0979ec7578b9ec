/**
 * Summarizes a V8 .cpuprofile (node --cpu-prof): the top self-time frames, and self time by file (node
 * internals, each package, our files), so the twin layer's share of a call can be read off.
 * Run: npx tsx bench/twins/profile-summary.ts <file.cpuprofile> [top frames, default 40]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
const profile = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const top = Number(process.argv[3] ?? 40);
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const where = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*\/node_modules\/((@[^/]+\/)?[^/]+)\/.*/, '$1')
    .replace(/^.*\/work\/[^/]+\//, '');
const self = new Map<string, number>();
const byFile = new Map<string, number>();
let total = 0;
let idle = 0;
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0;
  const { functionName, url, lineNumber } = nodes.get(id)!.callFrame;
  if (functionName === '(idle)') idle += dt;
  const file = url ? where(url) : functionName;
  const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  byFile.set(file, (byFile.get(file) ?? 0) + dt);
  total += dt;
});
const busy = total - idle;
const share = (t: number) => `${((100 * t) / busy).toFixed(1).padStart(5)}%`;
console.log(
  `busy ${(busy / 1000).toFixed(0)} ms (idle ${(idle / 1000).toFixed(0)} ms left out); share of busy time:`,
);
for (const [key, t] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
  if (!key.startsWith('(idle)')) console.log(share(t), key);
console.log('--- by file or package');
for (const [file, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 30))
  if (file !== '(idle)') console.log(share(t), file);
