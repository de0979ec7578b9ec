import t from 'tap';
import { renderComment, type CommentView } from '../../app/comment.ts';
import type { BlockedEgress } from '../../server/sandboxes/egress.ts';

const ready = (blocked: BlockedEgress[] | undefined): CommentView => ({
  headSha: 'abcdef0123456789',
  prState: 'open',
  notice: null,
  publicUrl: 'http://twinbox.test',
  sandbox: {
    id: '00000000-0000-4000-8000-000000000001',
    status: 'ready',
    app_url: 'http://00000000-0000-4000-8000-000000000001.localhost:3000',
    twins: {},
    expires_at: '2026-11-23T10:00:00.000Z',
    error: null,
    ended_at: null,
    created_at: '2026-11-23T09:00:00.000Z',
    blocked_egress: blocked,
  },
});

t.test('the comment says when the code tried to call a real vendor, naming what was blocked', async (t) => {
  const body = renderComment(
    ready([
      { host: 'api.stripe.com', port: 443, count: 3, first_seen: '2026-11-23T09:01:00.000Z' },
      { host: '93.184.216.34', port: 80, count: 1, first_seen: '2026-11-23T09:02:00.000Z' },
    ]),
  );
  t.match(body, 'this code tried to call the real Stripe; the call was blocked');
  t.match(body, '`93.184.216.34:80`, `api.stripe.com:443`');
});

t.test(
  'a further attempt to the same place does not change the text (no rewrite of the comment)',
  async (t) => {
    const once = renderComment(ready([{ host: 'api.stripe.com', port: 443, count: 1, first_seen: 'x' }]));
    const often = renderComment(ready([{ host: 'api.stripe.com', port: 443, count: 9, first_seen: 'x' }]));
    t.equal(once, often);
  },
);

t.test('no blocked calls, no warning', async (t) => {
  t.notMatch(renderComment(ready([])), /Warning/);
  t.notMatch(renderComment(ready(undefined)), /Warning/);
});

t.test(
  "the comment links the sandbox's dashboard page while deploying, when ready and when failed",
  async (t) => {
    const page = 'http://twinbox.test/dashboard/sandboxes/00000000-0000-4000-8000-000000000001';
    const view = ready([]);
    t.match(renderComment(view), `[Sandbox page](${page})`);
    const deploying = renderComment({ ...view, sandbox: { ...view.sandbox!, status: 'building' } });
    t.match(deploying, `[sandbox page](${page})`);
    const failed = renderComment({ ...view, sandbox: { ...view.sandbox!, status: 'failed', error: 'boom' } });
    t.match(failed, `Logs: [sandbox page](${page})`);
    t.notMatch(failed, '/logs`', 'no longer points at the JSON API');
  },
);
