import type { Logger } from 'pino';
import { httpStatus, type GitHubClient } from './github.ts';

/** A repository as a webhook names it: the App acts on this name, and keys its records by this id. */
export interface EventRepository {
  id: number;
  fullName: string;
}

export interface CoverageOptions {
  /** An Octokit authenticated as the installation, or as the App itself (JWT) without an id. */
  auth: (installationId?: number) => Promise<GitHubClient>;
  logger: Logger;
  /** How long GitHub's answer is reused. */
  ttlMs: number;
}

interface Answer {
  covered: boolean;
  /** Why not, for the log. */
  reason?: string;
}

/**
 * Answers "does installation N really cover repository R?" by asking GitHub, not the webhook: a signed
 * payload still names the repository and the installation itself, and neither may be taken on trust
 * before a sandbox is made in somebody's account. Two questions, both needed:
 *
 * 1. `GET /repos/{owner}/{repo}/installation` as the App (JWT): GitHub's installation of this App on
 *    that repository must be the event's `installation.id` (404: the App is not installed there).
 * 2. `GET /repos/{owner}/{repo}` as that installation: the repository's id must be the event's, so a
 *    payload cannot pair a covered name with another repository's id (records are keyed by the id).
 *
 * Answers are cached for `ttlMs` (a repository removed from the installation stops being served
 * within that time); concurrent questions about the same pair share one round of requests. When
 * GitHub cannot be asked, the answer is "no" and is not cached.
 */
export class InstallationCoverage {
  private readonly answers = new Map<string, { answer: Promise<Answer>; until: number }>();

  constructor(private readonly options: CoverageOptions) {}

  async covers(installationId: number, repo: EventRepository): Promise<boolean> {
    const key = `${installationId}:${repo.id}:${repo.fullName.toLowerCase()}`;
    const now = Date.now();
    let entry = this.answers.get(key);
    if (!entry || entry.until <= now) {
      this.prune(now);
      entry = { answer: this.ask(installationId, repo), until: now + this.options.ttlMs };
      this.answers.set(key, entry);
    }
    let answer: Answer;
    try {
      answer = await entry.answer;
    } catch (error) {
      if (this.answers.get(key) === entry) this.answers.delete(key);
      this.options.logger.warn(
        { err: error, installation_id: installationId, repo: repo.fullName },
        'could not check that the installation covers the repository; event ignored',
      );
      return false;
    }
    if (!answer.covered) {
      this.options.logger.warn(
        { installation_id: installationId, repo: repo.fullName, repo_id: repo.id, reason: answer.reason },
        'webhook names a repository this installation does not cover; event ignored',
      );
    }
    return answer.covered;
  }

  private async ask(installationId: number, repo: EventRepository): Promise<Answer> {
    const [owner, name, ...rest] = repo.fullName.split('/');
    if (!owner || !name || rest.length) return { covered: false, reason: 'not an owner/repo name' };
    const app = await this.options.auth();
    let installedAs: number;
    try {
      const { data } = await app.rest.apps.getRepoInstallation({ owner, repo: name });
      installedAs = data.id;
    } catch (error) {
      if (httpStatus(error) === 404) return { covered: false, reason: 'the App is not installed on it' };
      throw error;
    }
    if (installedAs !== installationId) {
      return { covered: false, reason: `it belongs to installation ${installedAs}` };
    }
    const octokit = await this.options.auth(installationId);
    try {
      const { data } = await octokit.rest.repos.get({ owner, repo: name });
      if (data.id !== repo.id) return { covered: false, reason: `its id is ${data.id}` };
    } catch (error) {
      if (httpStatus(error) === 404) return { covered: false, reason: 'the installation cannot read it' };
      throw error;
    }
    return { covered: true };
  }

  private prune(now: number): void {
    for (const [key, entry] of this.answers) if (entry.until <= now) this.answers.delete(key);
  }
}
