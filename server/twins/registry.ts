import type { TwinFactory } from './driver.ts';
import { githubTwin } from './github/twin.ts';
import { slackTwin } from './slack/twin.ts';
import { stripeTwin } from './stripe/twin.ts';

/** Every twin implementation, by name. The catalog lists those that pass their SDK tests. */
export const twinFactories: ReadonlyMap<string, TwinFactory> = new Map(
  [githubTwin, stripeTwin, slackTwin].map((f) => [f.name, f]),
);
