# Twinbox for operators (docs/production.md). Two stages: the build stage installs every dependency
# with npm ci and drops the development ones; the runtime stage has Node 20, the production
# dependencies, the source (run by tsx, as `npm start` does) and what sandboxes need: bubblewrap
# confines each deployed app, iproute2 and util-linux (ip, nsenter, setpriv) give each sandbox its own
# network namespace.
#
# With NODE_ENV=production Twinbox does not start unless bubblewrap can create namespaces, a cgroup
# file system is writable and network namespaces can be made (docs/security.md). A default container
# has none of that (no CAP_SYS_ADMIN for bwrap's namespaces, no CAP_NET_ADMIN for the veth links of
# each sandbox, seccomp/AppArmor refusing unshare and mount, /sys/fs/cgroup read-only), so run it with
#   docker run --privileged ...
# or, narrower and untried here, --cap-add SYS_ADMIN --cap-add NET_ADMIN --security-opt
# seccomp=unconfined --security-opt apparmor=unconfined plus a writable cgroup v2 subtree
# (docs/production.md, "Running the container"). Not built where it was written: no container engine.

ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# The type check is the build's gate: the image is never made from code that does not compile.
RUN npx tsc --noEmit && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE} AS runtime
RUN apt-get update \
  && apt-get install -y --no-install-recommends bubblewrap iproute2 util-linux ca-certificates \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
  PORT=3000 \
  TWINBOX_BIND_HOST=0.0.0.0 \
  TWINBOX_DATA_DIR=/var/lib/twinbox
WORKDIR /app
COPY --from=build /build/package.json /build/package-lock.json ./
COPY --from=build /build/node_modules ./node_modules
COPY --from=build /build/server ./server
COPY --from=build /build/app ./app
COPY --from=build /build/client ./client
COPY --from=build /build/tsconfig.json ./
# The data dir (twin state, workspaces, logs; the whole store on lowdb) is a volume. The process stays
# root inside the container: network namespaces and cgroups of sandboxes need it (docs/production.md).
RUN mkdir -p /var/lib/twinbox
VOLUME /var/lib/twinbox
EXPOSE 3000
CMD ["node_modules/.bin/tsx", "server/main.ts"]
