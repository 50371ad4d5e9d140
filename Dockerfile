# genbatch in a container: built from this checkout with the committed lockfile, production dependencies only,
# run as a non-root user under an init so that SIGTERM reaches node (it then saves its state and exits 130).
#
#   docker build -t genbatch .
#   docker run --rm -e GENBATCH_API_KEY -e GENBATCH_BASE_URL -v "$PWD:/work" -v genbatch-state:/state \
#     genbatch run catalog.yaml --state /state/catalog.sqlite

FROM node:24-bookworm-slim AS build
WORKDIR /opt/genbatch
COPY package.json package-lock.json .npmrc tsconfig.json tsconfig.build.json tsconfig.browser.json ./
COPY scripts ./scripts
COPY src ./src
COPY schemas ./schemas
# npm ci installs from the lockfile and builds (prepare); the dev dependencies then go. The SQLite driver for
# this Node (better-sqlite3 13) ships its binary; the optional one for Node 20 may fail to build here: unused.
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund && rm -rf src scripts tsconfig*.json

FROM node:24-bookworm-slim
# tini as PID 1 forwards signals to genbatch and reaps its children.
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/genbatch /opt/genbatch
RUN ln -s /opt/genbatch/dist/bin/genbatch.js /usr/local/bin/genbatch \
  && mkdir -p /work /state && chown node:node /work /state
USER node
WORKDIR /work
# The state survives the container (with outputs in a bucket it is a working copy: the bucket keeps snapshots).
VOLUME ["/state"]
ENTRYPOINT ["/usr/bin/tini", "--", "genbatch"]
CMD ["--help"]
