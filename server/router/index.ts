/** One router on Twinbox's own port, by Host: apps and twins of sandboxes (docs/routing.md). */
export { parseSandboxHost, sandboxHosts, type SandboxHost, type SandboxHosts } from './hosts.ts';
export {
  attachRouter,
  FORWARDED_HEADER,
  type RemoteLocation,
  type RemoteSandboxes,
  type ForwardedRequest,
  type ForwardObserver,
  type Router,
  type RouterOptions,
  type RouteTarget,
  type SandboxEndpoints,
  type SandboxState,
} from './router.ts';
export { endedPage, type EndedSandbox } from './pages.ts';
export { REQUEST_ID_HEADER } from './headers.ts';
