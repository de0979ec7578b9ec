import type { Context } from 'probot';
import { TTL_MAX } from '../../server/sandboxes/validation.ts';
import { MARKER } from '../comment.ts';
import { syncPull } from '../comment-upkeep.ts';
import type { AppDeps } from '../deps.ts';
import { canWrite, isPullRequest } from '../github.ts';
import { pullFacts, pullKey, type PullPayload } from '../pull-facts.ts';
import { liveSandbox, rememberPull, savePull } from '../pull-records.ts';
import { createPullSandbox } from '../sandbox-creation.ts';
import { endSandbox, EXTEND_DEFAULT_MINUTES, extendSandbox, supersede } from '../sandbox-control.ts';

const COMMANDS = ['deploy', 'extend', 'stop'] as const;

/**
 * `issue_comment.created` on a pull request: `/twinbox deploy` (deploy the current head now, replacing
 * the sandbox; also approves a fork's head commit), `/twinbox extend [minutes]`, `/twinbox stop`.
 * Only people with write access may run them; anyone else gets a short reply. The App's own comments
 * (the marker) and bots are ignored, and so is a comment whose repository the installation does not cover.
 */
export function onIssueComment(deps: AppDeps) {
  return async (context: Context<'issue_comment.created'>): Promise<void> => {
    const { payload } = context;
    const installationId = payload.installation?.id;
    if (installationId === undefined) return;
    // Signed, but the shape is still the sender's word: what GitHub always sends must be there.
    if (typeof payload.comment?.body !== 'string' || typeof payload.repository?.owner?.login !== 'string')
      return;
    const text = payload.comment.body.trim();
    if (payload.comment.user?.type === 'Bot' || text.includes(MARKER)) return;
    if (!/^\/twinbox\b/i.test(text)) return;
    const repository = { id: payload.repository.id, fullName: payload.repository.full_name };
    if (!(await deps.coverage.covers(installationId, repository))) return;

    const octokit = context.octokit;
    const owner = payload.repository.owner.login;
    const repo = payload.repository.name;
    const number = payload.issue.number;
    const commenter = payload.comment.user?.login ?? 'ghost';
    // GitHub marks a pull request's issue with `issue.pull_request`; when absent, ask (some servers omit it).
    if (payload.issue.pull_request === undefined && !(await isPullRequest(octokit, owner, repo, number))) {
      return;
    }
    const reply = (body: string) =>
      octokit.rest.issues.createComment({ owner, repo, issue_number: number, body: `@${commenter} ${body}` });
    if (!(await canWrite(octokit, owner, repo, commenter))) {
      await reply(
        `only people with write access to ${owner}/${repo} can run Twinbox commands; nothing was done.`,
      );
      return;
    }
    const match = /^\/twinbox\s+(\S+)(?:\s+(\S+))?\s*$/i.exec(text.split('\n')[0]!.trim());
    const command = COMMANDS.find((c) => c === match?.[1]?.toLowerCase());
    if (!command) {
      await reply(
        'unknown Twinbox command. Use `/twinbox deploy`, `/twinbox extend [minutes]` or `/twinbox stop`.',
      );
      return;
    }
    const argument = match?.[2];

    await deps.pullLocks.run(pullKey(payload.repository.id, number), async () => {
      // The pull request as GitHub has it now (the payload of a comment does not carry it).
      const { data: pr } = await octokit.rest.pulls.get({ owner, repo, pull_number: number });
      const facts = pullFacts(pr as PullPayload, installationId);
      let rec = await rememberPull(deps.store, facts);
      if (facts.state === 'closed') {
        await reply('this pull request is closed; nothing was done.');
        return;
      }
      if (command === 'deploy') {
        rec = await savePull(deps.store, rec, { approved_sha: facts.headSha });
        rec = await supersede(deps, rec);
        await createPullSandbox(deps, rec, facts, { byCommand: true });
        return;
      }
      const sandbox = await liveSandbox(deps.store, rec.sandbox_id);
      if (!sandbox) {
        await reply('this pull request has no running sandbox; nothing was done.');
        return;
      }
      if (command === 'stop') {
        rec = await savePull(deps.store, rec, {
          notice: {
            kind: 'stopped',
            text: `Stopped by @${commenter}. Comment \`/twinbox deploy\` to start a new one.`,
          },
        });
        await endSandbox(deps, rec, 'stopped');
        await syncPull(deps, rec);
        return;
      }
      const minutes = argument === undefined ? EXTEND_DEFAULT_MINUTES : Number(argument);
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > TTL_MAX) {
        await reply(`\`/twinbox extend\` takes a whole number of minutes from 1 to ${TTL_MAX}.`);
        return;
      }
      const refusal = await extendSandbox(deps, sandbox, minutes);
      if (refusal) {
        await reply(refusal);
        return;
      }
      await syncPull(deps, rec);
    });
  };
}
