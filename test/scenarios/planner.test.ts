import t from 'tap';
import { MAX_ENTITIES, planFromPrompt } from '../../server/scenarios/planner.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import { PROMPTS } from './prompts.ts';

t.test(
  'twenty prompts over every catalog twin give the entities they describe, in valid seeds',
  async (t) => {
    t.equal(PROMPTS.length, 20);
    const covered = new Set<string>();
    for (const [prompt, twins, measure, expected] of PROMPTS) {
      const plan = planFromPrompt(prompt);
      t.same(plan.twins, twins, `${prompt}: twins`);
      t.same(measure(plan.seed), expected, `${prompt}: entities`);
      for (const twin of plan.twins) {
        covered.add(twin);
        t.doesNotThrow(
          () => twinFactories.get(twin)!.validateSeed(plan.seed[twin]),
          `${prompt}: ${twin} seed is valid`,
        );
      }
    }
    t.same([...covered].sort(), ['github', 'slack', 'stripe'], 'every catalog twin is covered');
  },
);

t.test('the same prompt always gives the same seed', async (t) => {
  const prompt = '3 customers, one whose card declines, and a repo with 2 open PRs';
  t.same(planFromPrompt(prompt), planFromPrompt(prompt));
});

t.test('a prompt that makes no sense seeds nothing and says so', async (t) => {
  const plan = planFromPrompt('make it rain purple elephants');
  t.same(plan.seed, {});
  t.same(plan.twins, []);
  t.match(plan.notes[0], /Nothing in the prompt could be interpreted/);
});

t.test('what is not understood is named; what is understood is still seeded', async (t) => {
  const plan = planFromPrompt('3 customers and a unicorn');
  t.equal((plan.seed.stripe as any).customers.length, 3);
  t.same(plan.notes, ['Not interpreted: "a unicorn".']);
});

t.test('counts are capped, and the cap is reported', async (t) => {
  const plan = planFromPrompt('2000 customers');
  t.equal((plan.seed.stripe as any).customers.length, MAX_ENTITIES);
  t.match(plan.notes.join(' '), /asked for 2000, seeded 50/);
});
