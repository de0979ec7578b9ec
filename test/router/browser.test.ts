import t from 'tap';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import { attachRouter, sandboxHosts } from '../../server/router/index.ts';
import { startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { EndpointTable, startBackend } from './helpers.ts';

const PAGE = `<!doctype html><title>app</title><p id="out">...</p><script>
const ws = new WebSocket('ws://' + location.host + '/socket');
ws.onopen = () => ws.send('from the page');
ws.onmessage = (event) => { document.getElementById('out').textContent = event.data; ws.close(); };
</script>`;

t.test(
  'Chromium: http://<id>.localhost:<port>/ with no DNS setup, a WebSocket from the page, a host-only cookie',
  { skip: chromiumSkip },
  async (t) => {
    const dir = await tempDir(t, 'twinbox-router-browser-');
    const twinbox = await startTestTwinbox(t);
    const table = new EndpointTable();
    const router = attachRouter(twinbox.server, {
      domain: 'localhost',
      endpoints: table,
      logger: twinbox.logger,
    });
    t.teardown(() => router.close());
    await twinbox.server.start();
    const hosts = sandboxHosts('localhost', new URL(`http://localhost:${twinbox.server.info.port}`));

    const id = randomUUID();
    const app = await startBackend(t, dir, 'app', (_req, res) => {
      // Asks for the parent domain; the router makes it host-only.
      res.setHeader('set-cookie', 'visited=1; Domain=localhost; Path=/');
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.end(PAGE);
    });
    const wss = new WebSocketServer({ server: app.server });
    wss.on('connection', (socket) => socket.on('message', (data) => socket.send(`echo: ${String(data)}`)));
    t.teardown(() => wss.close());
    table.live(id, { app: app.socketPath });

    const browser = await launchChromium(t);
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(`${hosts.appUrl(id)}/`);
    t.equal(response?.status(), 200);
    await page.waitForFunction("document.getElementById('out').textContent !== '...'");
    t.equal(await page.textContent('#out'), 'echo: from the page');

    const cookies = await context.cookies();
    t.same(
      cookies.map((c) => ({ name: c.name, domain: c.domain })),
      [{ name: 'visited', domain: `${id}.localhost` }],
      'the cookie is host-only: no other sandbox sees it',
    );
  },
);
