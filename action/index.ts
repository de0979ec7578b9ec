// Entry of the bundled Action (dist/index.js), main and post step alike; the logic is in main.ts and twins.ts.
import * as core from '@actions/core';
import { run } from './main.ts';
import { post } from './twins.ts';

// The runner hands the post step what the main step saved. Saved first thing, so that a main step that
// fails early is never run a second time as its own post step.
if (core.getState('isPost') === 'true') await post();
else {
  core.saveState('isPost', 'true');
  await run();
}
