import { createServer } from 'node:http';

// Baseline: the cheapest JSON answer Node can give, with no framework.
const body = JSON.stringify({
  sandbox_id: '00000000-0000-4000-8000-000000000000',
  status: 'queued',
  app_url: null,
});
const server = createServer((_request, response) => {
  response.writeHead(200, { 'content-type': 'application/json' });
  response.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
});
