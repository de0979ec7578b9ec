import t from 'tap';
import { MAX_EVENTS_PER_SANDBOX } from '../../server/timeline/events.ts';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';
import { until } from '../helpers/deploy.ts';

t.test(
  "Twinbox's events: steps, a crash, blocked calls once per destination, bounded per sandbox",
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    const { body } = await createSandbox(tb, user.key);
    const id: string = body.sandbox_id;
    const events = tb.timeline.events;

    tb.timeline.onStep(id, 'source', 'started');
    tb.timeline.onStep(id, 'source', 'finished', 1234);
    tb.timeline.onStep(id, 'install', 'started');
    tb.timeline.onStep(id, 'install', 'failed', 80, 'Install failed: npm exited with code 1');
    const blockedAt = new Date(Date.now() - 1000).toISOString();
    await tb.lifecycle.recordBlockedEgress(id, [
      { host: 'api.stripe.com', port: 443, count: 1, first_seen: blockedAt },
    ]);
    await tb.lifecycle.recordBlockedEgress(id, [
      { host: 'api.stripe.com', port: 443, count: 5, first_seen: blockedAt },
      { host: '10.0.0.1', port: 22, count: 1, first_seen: blockedAt },
    ]);
    // The deployer reports a crash this way; this sandbox is only queued, so it is not failed, but the
    // crash is still told.
    await tb.lifecycle.markFailed(id, 'App crashed: the app exited with code 7');
    await events.idle();

    const { body: page } = await call(tb, { url: `/sandboxes/${id}/timeline`, token: user.key });
    t.same(
      page.entries.map((e: any) => [e.kind, e.summary]),
      [
        ['status', 'Created for a/b branch m'],
        ['deploy_step', 'Deploy step "source" started'],
        ['deploy_step', 'Deploy step "source" done in 1.2 s'],
        ['deploy_step', 'Deploy step "install" started'],
        ['deploy_step', 'Deploy step "install" failed in 80 ms: Install failed: npm exited with code 1'],
        [
          'blocked_egress',
          'Blocked an outbound call to api.stripe.com:443 (the real Stripe: this sandbox has no twin answering for it)',
        ],
        ['blocked_egress', 'Blocked an outbound call to 10.0.0.1:22'],
        ['crash', 'App crashed: the app exited with code 7'],
      ],
    );
    t.match(page.entries[4], { duration_ms: 80, detail: { step: 'install', phase: 'failed' } });
    t.match(page.entries[5], {
      at: blockedAt,
      detail: { host: 'api.stripe.com', port: 443, vendor: 'Stripe' },
    });

    // A flood of events keeps only the newest; numbering goes on.
    for (let i = 0; i < MAX_EVENTS_PER_SANDBOX + 20; i++) tb.timeline.onStep(id, 'build', 'started');
    await events.idle();
    const kept = await tb.store.sandboxEvents.findBy('sandbox_id', id);
    t.equal(kept.length, MAX_EVENTS_PER_SANDBOX);
    const seqs = kept.map((r) => r.seq).sort((a, b) => a - b);
    t.equal(seqs.at(-1), 7 + MAX_EVENTS_PER_SANDBOX + 20);
    t.equal(seqs[0], seqs.at(-1)! - MAX_EVENTS_PER_SANDBOX + 1, 'the oldest went');

    // Another sandbox's events are its own.
    const { body: other } = await createSandbox(tb, user.key);
    await call(tb, { method: 'DELETE', url: `/sandboxes/${other.sandbox_id}`, token: user.key });
    await until(
      async () => (await tb.store.sandboxEvents.findBy('sandbox_id', other.sandbox_id)).length === 1,
      'the deletion',
    );
    const { body: theirs } = await call(tb, {
      url: `/sandboxes/${other.sandbox_id}/timeline`,
      token: user.key,
    });
    t.same(
      theirs.entries.map((e: any) => e.summary),
      ['Created for a/b branch m', 'Deleted'],
    );
  },
);
