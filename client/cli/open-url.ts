import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/** The system's "open this URL" command: `open` on macOS, `start` on Windows, else `xdg-open`. */
function opener(url: string): { command: string; args: string[] } {
  if (process.platform === 'darwin') return { command: 'open', args: [url] };
  // `start` is built into cmd; its first quoted argument is a window title, hence the empty one.
  if (process.platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""', url] };
  return { command: 'xdg-open', args: [url] };
}

function onPath(command: string): boolean {
  if (process.platform === 'win32') return true; // cmd is always there
  return (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || '.', command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Hands `url` to the system's opener, detached, so the CLI exits while the browser stays. Resolves
 * once the opener has started (or could not be), never waiting for the browser.
 */
export async function openInBrowser(url: string): Promise<{ command?: string; problem?: string }> {
  const { command, args } = opener(url);
  if (!onPath(command)) return { problem: `no ${command} on the PATH` };
  return new Promise((resolve) => {
    const child = spawn(command, args, { detached: true, stdio: 'ignore', windowsHide: true });
    child.once('error', (error) => resolve({ problem: `${command}: ${error.message}` }));
    child.once('spawn', () => {
      child.unref();
      resolve({ command });
    });
  });
}
