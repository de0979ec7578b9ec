// Entry of the bundled Action (dist/index.js); the logic is in main.ts.
import { run } from './main.ts';

await run();
