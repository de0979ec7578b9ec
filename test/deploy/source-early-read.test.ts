import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GitHubSource } from '../../server/deploy/steps/source.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { githubToDeployFrom } from '../helpers/deploy.ts';

/**
 * A deploy asks for its tarball while its workspace is made (SourceFetcher.download) and unpacks it after.
 * A response left unread that long is one a server may end: the GitHub twin's server drops a connection
 * idle for 5 s with the rest of its answer unsent. The download is read ahead while it waits.
 */
t.test(
  'a download that waits longer than the server keeps an idle connection still unpacks whole',
  async (t) => {
    const gh = await githubToDeployFrom(t);
    // Incompressible, larger than a socket's buffers: most of it is still to come when the wait begins.
    const big = randomBytes(600_000).toString('base64');
    await gh.createRepo({ owner: 'octocat', name: 'big', files: { 'big.txt': big, 'a.txt': 'a\n' } });
    const source = new GitHubSource({ apiUrl: gh.baseUrl, token: gh.token, webHosts: [] });
    const resolved = await source.resolve({ repo: 'octocat/big', branch: 'main', pr_url: null } as never);
    const download = await source.download(resolved);
    await new Promise((resolve) => setTimeout(resolve, 6_500));
    const dest = await tempDir(t);
    const files = await source.unpack(download, dest);
    t.ok(files >= 2, `unpacked (${files} files)`);
    t.equal(await readFile(join(dest, 'big.txt'), 'utf8'), big, 'the large file whole');
    t.equal(await readFile(join(dest, 'a.txt'), 'utf8'), 'a\n');
  },
);
